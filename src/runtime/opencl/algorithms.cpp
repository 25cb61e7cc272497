// runtime/opencl/algorithms.cpp -- the OpenCL backend's device algorithms (algorithms.hpp): for each,
// the program's build options, the kernel's shape (tuning.hpp) and its launch.
#include "algorithms.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "../runtime.hpp"
#include "tuning.hpp"

namespace multireduce::runtime::opencl {
namespace {

/// The OpenCL C type of elements of `type` in memory.
const char* element_type(dtype type) {
  switch (type) {
    case dtype::int8: return "char";
    case dtype::int16: return "short";
    case dtype::int32: return "int";
    case dtype::int64: return "long";
    case dtype::uint8: return "uchar";
    case dtype::uint16: return "ushort";
    case dtype::uint32: return "uint";
    case dtype::uint64: return "ulong";
    case dtype::float16: return "half";
    case dtype::float32: return "float";
    case dtype::float64: return "double";
  }
  return "?";
}

const char* value_type(dtype type) { return type == dtype::float16 ? "float" : element_type(type); }
std::size_t value_bytes(dtype type) { return type == dtype::float16 ? 4 : size_of(type); }

const char* op_macro(op_kind op) {
  switch (op) {
    case op_kind::sum: return "OP_SUM";
    case op_kind::prod: return "OP_PROD";
    case op_kind::min: return "OP_MIN";
    case op_kind::max: return "OP_MAX";
    case op_kind::bit_and: return "OP_AND";
    case op_kind::bit_or: return "OP_OR";
    case op_kind::bit_xor: return "OP_XOR";
    case op_kind::argmin: return "OP_ARGMIN";
    case op_kind::argmax: return "OP_ARGMAX";
  }
  return "?";
}

/// Vectors of 4 values a work-item stages in segments_staged: the tile's bytes over the group's
/// work-items, at most 16 (registers).
int staged_vectors(dtype type) {
  using tuning = segments_tuning;
  const std::uint64_t v = tuning::staged_tile_bytes / (std::uint64_t(tuning::staged_group) * 4 * value_bytes(type));
  return int(std::clamp<std::uint64_t>(v, 1, 16));
}

/// The longest mean length segments_staged takes: 5/6 of a work-item's share of the stage (40 for
/// 4-byte elements, 20 for 8-byte ones), so that a tile of average segments fits with room to spare.
std::int64_t staged_mean_max(dtype type) {
  return std::int64_t(staged_vectors(type)) * 4 * segments_tuning::staged_fill_numerator / segments_tuning::staged_fill_denominator;
}

bool integer_accumulator(dtype type, op_kind op) {
  return (op == op_kind::sum || op == op_kind::prod) && !is_floating(type);
}

}  // namespace

std::string program_options(dtype type, op_kind op, lanes l, bool unroll, bool widen) {
  const bool positional = info(op).positional;
  const std::string val = value_type(type);
  const std::string acc = positional ? "kv" : widen && integer_accumulator(type, op) ? "ulong" : val;
  std::string o = "-cl-std=CL1.2 -DELEM=" + std::string(element_type(type)) + " -DVAL=" + val + " -DACC=" + acc +
                  " -DOUT=" + (positional ? std::string("long") : acc) + " -D" + op_macro(op) + " -DVEC4=" + val + "4" +
                  " -DWIDTH=" + std::to_string(l.width) + " -DFORM=" + std::to_string(int(l.form)) +
                  " -DCHUNK=" + std::to_string(window_tuning::chunk) + " -DSTAGED_VECTORS=" +
                  std::to_string(staged_vectors(type)) + " -DSTAGED_ALONE=" + std::to_string(segments_tuning::staged_alone);
  if (is_floating(type)) o += " -DVAL_IS_FLOAT";
  if (type == dtype::float16) o += " -DELEM_IS_HALF";
  if (type == dtype::float64) o += " -DUSE_FP64";
  if (unroll) o += " -DUNROLL_LANES";
  return o;
}

std::string statistics_options(dtype type, bool unroll) {
  return program_options(type, op_kind::argmin, lanes{}, unroll) + " -DUSE_FP64 -DSUM_T=" +
         (is_floating(type) ? "double" : "ulong") + " -DSTATS_VECTORS=" + std::to_string(statistics_tuning::vectors_in_flight);
}

namespace {

/// The build options of a program over elements of `type` with `op` in lanes `l` on `d` (loops
/// over lanes unrolled but on a CPU, whose compiler builds far faster without).
std::string build_options(const device& d, dtype type, op_kind op, lanes l, bool widen = true) {
  return program_options(type, op, l, !d.cpu, widen);
}

/// The largest power of two <= wanted (and a multiple of `multiple`) that the kernel runs with on `d`.
std::size_t fit_group(const cl::Kernel& k, const device& d, std::size_t wanted, std::size_t multiple = 1) {
  std::size_t limit = d.max_group;
  try {
    limit = std::min(limit, k.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(d.id));
  } catch (const cl::Error& e) {
    fail(e, "asking a kernel's work-group size");
  }
  std::size_t g = wanted;
  while (g > multiple && g > limit) g /= 2;
  if (g > limit) throw device_error(CL_INVALID_WORK_GROUP_SIZE, "OpenCL: " + d.name + " runs this kernel with at most " + std::to_string(limit) + " work-items, fewer than the " + std::to_string(multiple) + " lanes of its logical warp");
  return g;
}

/// The local memory a work-group of `k` may still take on `d`: the device's, less what the kernel
/// takes itself and a margin (NVIDIA's OpenCL refuses, CL_OUT_OF_RESOURCES, a work-group whose
/// local buffers fill CL_DEVICE_LOCAL_MEM_SIZE exactly).
std::uint64_t local_room(const cl::Kernel& k, const device& d) {
  try {
    const std::uint64_t own = k.getWorkGroupInfo<CL_KERNEL_LOCAL_MEM_SIZE>(d.id) + 1024;
    return d.local_bytes > own ? d.local_bytes - own : 0;
  } catch (const cl::Error& e) {
    fail(e, "asking a kernel's local memory");
  }
}

void launch(device& d, const cl::Kernel& k, std::size_t groups, std::size_t group, events* ev, const char* what) {
  if (groups == 0) return;
  cl::Event e;
  try {
    d.queue.enqueueNDRangeKernel(k, cl::NullRange, cl::NDRange(groups * group), cl::NDRange(group), nullptr, &e);
  } catch (const cl::Error& err) {
    fail(err, std::string("running ") + what + " on " + d.name);
  }
  if (ev) ev->push_back(e);
}

/// Sets the kernel's arguments in order (a std::span<const std::byte> as raw bytes, cl::Local as
/// local memory).
template <class... Args>
void set_args(cl::Kernel& k, const Args&... args) {
  cl_uint i = 0;
  try {
    (
        [&] {
          if constexpr (std::is_same_v<Args, std::span<const std::byte>>) k.setArg(i++, args.size(), args.data());
          else k.setArg(i++, args);
        }(),
        ...);
  } catch (const cl::Error& e) {
    fail(e, "setting the argument " + std::to_string(i) + " of a kernel");
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

std::size_t accumulator_bytes(dtype type, op_kind op) {
  if (info(op).positional) return 16;  // kv: a value of at most 8 bytes, padded, and a 64-bit position
  if (integer_accumulator(type, op)) return 8;
  return value_bytes(type);
}

std::size_t output_bytes(dtype type, op_kind op) { return info(op).positional ? 8 : accumulator_bytes(type, op); }

std::string unsupported_type(const device& d, dtype type) {
  if (type == dtype::float64 && !d.fp64) return d.name + " has no float64 (cl_khr_fp64)";
  return "";
}

void reduce_segments(device& d, lanes l, dtype type, op_kind op, std::span<const std::byte> init, const cl::Buffer& in,
                     std::int64_t n, const segment_shape& shape, const cl::Buffer& out, events* ev) {
  using tuning = segments_tuning;
  if (shape.segments == 0) return;
  const std::int64_t mean = n / shape.segments;
  const bool by_group = mean >= tuning::group_length || shape.longest >= tuning::longest_for_warps;
  const bool staged = !by_group && mean <= staged_mean_max(type);
  const char* name = by_group ? "segments_by_group" : staged ? "segments_staged" : "segments_by_warp";
  cl::Kernel k = d.kernel("segments", build_options(d, type, op, l), name);
  const int mode = shape.offsets ? 1 : 0;
  const cl::Buffer& offsets = shape.offsets ? *shape.offsets : in;  // unread in mode 0
  const std::size_t acc = accumulator_bytes(type, op);
  if (by_group) {
    const std::size_t group = fit_group(k, d, tuning::group);
    set_args(k, in, cl_long(n), cl_int(mode), cl_long(shape.length), offsets, cl_long(shape.segments), out, init,
             cl::Local(group * acc));
    launch(d, k, std::size_t(shape.segments), group, ev, name);
    return;
  }
  if (staged) {
    const std::size_t group = fit_group(k, d, tuning::staged_group);
    const std::int64_t tiles = ceil_div(shape.segments, std::int64_t(group));
    const std::int64_t groups = std::min<std::int64_t>(tiles, std::int64_t(d.compute_units) * tuning::staged_groups_per_compute_unit);
    set_args(k, in, cl_long(n), cl_int(mode), cl_long(shape.length), offsets, cl_long(shape.segments), out, init,
             cl::Local(group * std::size_t(staged_vectors(type)) * 4 * value_bytes(type)), cl::Local(group * acc));
    launch(d, k, std::size_t(groups), group, ev, name);
    return;
  }
  const std::size_t width = std::size_t(l.width);
  const std::size_t group = fit_group(k, d, std::size_t(tuning::warps) * width, width);
  const std::size_t scratch = l.form == exchange_form::local_memory ? group / width * 4 * width * acc : acc;
  set_args(k, in, cl_long(n), cl_int(mode), cl_long(shape.length), offsets, cl_long(shape.segments), out, init,
           cl::Local(scratch), cl::Local(group * 2 * sizeof(cl_long)));
  launch(d, k, std::size_t(ceil_div(shape.segments, std::int64_t(group))), group, ev, name);
}

std::int64_t whole_parts(const device& d, std::int64_t n) {
  using tuning = whole_tuning;
  const std::int64_t most = std::max<std::int64_t>(1, std::int64_t(d.compute_units) * tuning::parts_per_compute_unit);
  return std::clamp<std::int64_t>(ceil_div(n, tuning::min_part), 1, most);
}

void reduce_parts(device& d, lanes l, dtype type, op_kind op, std::span<const std::byte> init, const cl::Buffer& in,
                  std::int64_t n, const cl::Buffer& partials, events* ev) {
  cl::Kernel k = d.kernel("segments", build_options(d, type, op, l), "parts_by_group");
  const std::size_t group = fit_group(k, d, segments_tuning::group);
  const std::int64_t parts = whole_parts(d, n);
  set_args(k, in, cl_long(n), cl_long(parts), partials, init, cl::Local(group * accumulator_bytes(type, op)));
  launch(d, k, std::size_t(parts), group, ev, "parts_by_group");
}

std::int64_t column_parts(std::int64_t outer, std::int64_t rows, std::int64_t inner) {
  const std::int64_t outputs = std::max<std::int64_t>(1, outer * inner);
  return std::clamp<std::int64_t>(ceil_div(columns_tuning::outputs_to_fill, outputs), 1, std::max<std::int64_t>(rows, 1));
}

void reduce_columns(device& d, lanes l, dtype type, op_kind op, std::span<const std::byte> init, const cl::Buffer& in,
                    std::int64_t outer, std::int64_t rows, std::int64_t inner, const cl::Buffer& partials, events* ev) {
  cl::Kernel k = d.kernel("columns", build_options(d, type, op, l), "columns");
  const std::size_t group = fit_group(k, d, columns_tuning::group);
  const std::int64_t parts = column_parts(outer, rows, inner), outputs = outer * inner;
  for (std::int64_t p = 0; p < parts; ++p) {
    set_args(k, in, cl_long(outer), cl_long(rows), cl_long(inner), cl_long(rows * p / parts),
             cl_long(rows * (p + 1) / parts), partials, cl_long(p * outputs), init);
    launch(d, k, std::size_t(ceil_div(outputs, std::int64_t(group))), group, ev, "columns");
  }
}

void reduce_windows(device& d, lanes l, dtype type, op_kind op, std::span<const std::byte> init, const cl::Buffer& in,
                    std::int64_t n, std::int64_t window, const cl::Buffer& out, events* ev) {
  using tuning = window_tuning;
  const std::int64_t windows = n - window + 1;
  if (windows <= 0) return;
  const std::string options = build_options(d, type, op, l);
  const std::size_t acc = accumulator_bytes(type, op), value = value_bytes(type), outb = output_bytes(type, op);
  if (window - 1 >= 2 * tuning::chunk) {  // streamed, where its rings fit local memory
    cl::Kernel stream = d.kernel("window", options, "window_stream");
    const bool scans = l.form != exchange_form::local_memory;  // van Herk's groups (window.cl's stream_middle)
    const std::size_t group = fit_group(stream, d, tuning::stream_group, scans ? std::size_t(l.width) : 1);
    const std::int64_t tile = std::int64_t(group) * tuning::chunk, q = (window - 1) / tuning::chunk;
    // The ring of chunk folds holds whole groups of 32 (the shuffle forms' scans within groups).
    const std::int64_t ring = tile + ceil_div(window - 1, tuning::chunk) * tuning::chunk;
    const std::int64_t block_ring = ceil_div(std::int64_t(group) + q + 1, 32) * 32;
    int scan_group = 1;  // the largest power of 2 up to 32 below the q - 1 chunks of a middle
    while (scan_group < 32 && 2 * scan_group < q - 1) scan_group *= 2;
    auto padded = [](std::int64_t slots) { return std::size_t(slots + slots / 32 + 1); };  // window.cl's SPAD
    const std::size_t suffix = padded(ring) * acc, folds = 2 * std::size_t(block_ring) * acc, stage = padded(tile) * outb;
    // The scans' rings: each chunk's prefix and suffix in its group, and each group's fold.
    const std::size_t scan = scans ? std::size_t(block_ring) * acc : acc;
    const std::size_t group_scan = scans ? std::size_t(block_ring / scan_group) * acc : acc;
    if (suffix + folds + 2 * scan + group_scan + stage <= local_room(stream, d)) {
      // Each run starts by folding the tiles its first windows reach back into (`before`): runs of at
      // least stream_run_per_before times as many tiles keep that extra reading small.
      const std::int64_t tiles = ceil_div(n, tile), before = ceil_div((q + 1) * tuning::chunk, tile);
      const std::int64_t groups = std::clamp<std::int64_t>(tiles / (tuning::stream_run_per_before * before), 1,
                                                           std::int64_t(d.compute_units) * tuning::stream_groups_per_compute_unit);
      set_args(stream, in, cl_long(n), cl_long(window), out, init, cl_int(ring), cl_int(block_ring), cl_int(scan_group),
               cl::Local(suffix), cl::Local(folds), cl::Local(scan), cl::Local(scan), cl::Local(group_scan), cl::Local(stage));
      launch(d, stream, std::size_t(groups), group, ev, "window_stream");
      return;
    }
  }
  cl::Kernel tile = d.kernel("window", options, "window_tile");
  std::size_t limit = d.max_group;
  const std::uint64_t local_limit = local_room(tile, d);
  try {
    limit = std::min(limit, tile.getWorkGroupInfo<CL_KERNEL_WORK_GROUP_SIZE>(d.id));
  } catch (const cl::Error& e) {
    fail(e, "asking a kernel's work-group size");
  }
  for (const int group : tuning::groups) {
    if (std::size_t(group) > limit) continue;
    const std::int64_t tile_windows = std::int64_t(group) * tuning::chunk, span = tile_windows + window - 1;
    const std::int64_t chunks = ceil_div(span, tuning::chunk);
    // vals and stage padded with a slot every chunk (window.cl's PAD)
    const std::size_t vals = std::size_t(span + span / tuning::chunk + 1) * value;
    const std::size_t stage = std::size_t(tile_windows + tile_windows / tuning::chunk + 1) * outb;
    const std::size_t folds = std::size_t(chunks) * acc;
    if (vals + 4 * folds + stage > local_limit) continue;
    set_args(tile, in, cl_long(n), cl_long(window), out, init, cl::Local(vals), cl::Local(folds), cl::Local(folds),
             cl::Local(folds), cl::Local(folds), cl::Local(stage));
    launch(d, tile, std::size_t(ceil_div(windows, tile_windows)), std::size_t(group), ev, "window_tile");
    return;
  }
  // Too long for local memory: double folds of 2^k elements over global memory.
  cl::Kernel load = d.kernel("window", options, "window_load"), take = d.kernel("window", options, "window_take");
  cl::Kernel twice = d.kernel("window", options, "window_double"), emit = d.kernel("window", options, "window_emit");
  const std::size_t bytes = std::size_t(n) * acc;
  cl::Buffer folds = allocate(d, bytes, "the windows' folds"), next = allocate(d, bytes, "the windows' folds");
  cl::Buffer result = allocate(d, std::size_t(windows) * acc, "the windows' folds");
  const std::size_t group = tuning::group;
  auto groups = [&](std::int64_t count) { return std::size_t(ceil_div(std::max<std::int64_t>(count, 0), std::int64_t(group))); };
  set_args(load, in, cl_long(n), folds);
  launch(d, load, groups(n), group, ev, "window_load");
  std::int64_t covered = 0;
  for (std::int64_t s = 1; s <= window; s *= 2) {
    if (window & s) {
      set_args(take, result, folds, cl_long(covered), cl_long(windows), cl_int(covered == 0));
      launch(d, take, groups(windows), group, ev, "window_take");
      covered += s;
    }
    if (2 * s <= window) {  // folds of 2s elements, where a window still needs one
      const std::int64_t count = n - 2 * s + 1;
      set_args(twice, next, folds, cl_long(s), cl_long(count));
      launch(d, twice, groups(count), group, ev, "window_double");
      std::swap(folds, next);
    }
  }
  set_args(emit, result, cl_long(windows), out, init);
  launch(d, emit, groups(windows), group, ev, "window_emit");
}

std::int64_t statistics_parts(const device& d, std::int64_t n) {
  using tuning = statistics_tuning;
  const std::int64_t most = std::max<std::int64_t>(1, std::int64_t(d.compute_units) * tuning::parts_per_compute_unit);
  return std::clamp<std::int64_t>(ceil_div(n, tuning::min_part), 1, most);
}

std::size_t statistics_state_bytes(dtype) { return 8 * 6 + 2 * 16; }

void statistics(device& d, dtype type, const cl::Buffer& in, std::int64_t n, double shift, const cl::Buffer& states,
                events* ev) {
  cl::Kernel k = d.kernel("statistics", statistics_options(type, !d.cpu), "statistics_parts");
  const std::size_t group = fit_group(k, d, statistics_tuning::group);
  const std::int64_t parts = statistics_parts(d, n);
  visit(type, [&](auto element) {
    using T = decltype(element);
    using V = std::conditional_t<std::is_same_v<T, float16_bits>, float, T>;
    const V lowest = multireduce::maximum::identity<V>(), highest = multireduce::minimum::identity<V>();
    set_args(k, in, cl_long(n), cl_long(parts), cl_double(shift), states, lowest, highest,
             cl::Local(group * statistics_state_bytes(type)));
  });
  launch(d, k, std::size_t(parts), group, ev, "statistics_parts");
}

void knn_hamming(device& d, const cl::Buffer& query, std::int64_t query_first, std::int64_t queries,
                 const cl::Buffer& train, std::int64_t train_first, std::int64_t trains, int bytes, int k,
                 const cl::Buffer& idx, const cl::Buffer& dist, events* ev) {
  const int words = bytes / 4;
  cl::Kernel kernel = d.kernel("knn", "-cl-std=CL1.2 -DWORDS=" + std::to_string(words) + " -DK=" + std::to_string(k), "knn_hamming");
  const std::size_t group = fit_group(kernel, d, knn_tuning::group);
  const std::int64_t rows = std::max<std::int64_t>(
      1, std::min<std::int64_t>(knn_tuning::rows, std::int64_t(d.local_bytes / (4 * std::uint64_t(words)))));
  set_args(kernel, query, cl_long(query_first), cl_long(queries), train, cl_long(train_first), cl_long(trains), idx, dist,
           cl::Local(std::size_t(rows) * 4 * std::size_t(words)), cl_long(rows));
  launch(d, kernel, std::size_t(ceil_div(queries, std::int64_t(group))), group, ev, "knn_hamming");
}

void paper_window_sums(device& d, lanes l, paper_kernel kernel, dtype type, const cl::Buffer& in, std::int64_t n,
                       const cl::Buffer& out, int group, events* ev) {
  if (type != dtype::int32 && type != dtype::float32 && type != dtype::float64)
    throw std::invalid_argument("the section-7 benchmark runs int32, float32 and float64");
  const char* name = kernel == paper_kernel::butterfly ? "paper_butterfly" : "paper_multi_reduce";
  cl::Kernel k = d.kernel("paper", build_options(d, type, op_kind::sum, l, false), name);
  const std::size_t width = std::size_t(l.width), g = fit_group(k, d, std::size_t(group), width);
  const std::size_t per_warp = kernel == paper_kernel::butterfly ? 2 : 4;
  const std::size_t scratch = l.form == exchange_form::local_memory ? g / width * per_warp * width * size_of(type) : size_of(type);
  set_args(k, in, cl_long(n), out, cl::Local(scratch));
  const std::int64_t windows = std::max<std::int64_t>(0, n - std::int64_t(width) + 1);
  launch(d, k, std::size_t(ceil_div(windows, std::int64_t(g))), g, ev, name);
}

double elapsed_seconds(const events& ev) {
  if (ev.empty()) return 0;
  try {
    for (const cl::Event& e : ev) e.wait();
    const cl_ulong start = ev.front().getProfilingInfo<CL_PROFILING_COMMAND_START>();
    const cl_ulong end = ev.back().getProfilingInfo<CL_PROFILING_COMMAND_END>();
    return double(end - start) * 1e-9;
  } catch (const cl::Error& e) {
    fail(e, "reading a kernel's time");
  }
}

}  // namespace multireduce::runtime::opencl
