// common.cl -- what every multireduce OpenCL program starts with: the element and accumulator
// types, the operator, and the lane exchange of the multi-reduction in the form the device takes.
//
// The host builds each program with these definitions (src/runtime/opencl/programs.cpp):
//   ELEM     the element type in memory (half for float16: read with vload_half)
//   VAL      the element's value type (float for float16)
//   ACC      the accumulator: ulong for integer sums and products (wrapping, as NumPy's int64),
//            struct kv for argmin/argmax, VAL otherwise
//   VEC4     four VALs (float4, int4, ...): what LOAD4 gives
//   OUT      what a segment or window writes: long positions for argmin/argmax, ACC otherwise
//   OP_SUM, OP_PROD, OP_MIN, OP_MAX, OP_AND, OP_OR, OP_XOR, OP_ARGMIN or OP_ARGMAX (one of them)
//   VAL_IS_FLOAT  when VAL is floating point (min/max/argmin/argmax follow NumPy's NaN rules)
//   WIDTH    the logical warp: 32 or 64 lanes (an NVIDIA warp, an AMD wave64 wavefront, a sub-group)
//   FORM     how lanes exchange values: FORM_LOCAL (local memory and barriers, the multi-reduction
//            paper's section 6: any OpenCL 1.2 device), FORM_SUBGROUP (sub_group_shuffle_xor,
//            cl_khr_subgroup_shuffle), FORM_PTX (NVIDIA: inline PTX shfl.sync.bfly)
//   USE_FP64 when the program needs double (cl_khr_fp64)
//   CHUNK, STAGED_VECTORS, STAGED_ALONE  the shapes of window.cl's and segments.cl's kernels
//            (tuning.hpp); STATS_VECTORS statistics.cl's vectors in flight
//   UNROLL_LANES on GPUs: the loops over a warp's lanes and a chunk's items unrolled, so that
//            per-lane arrays stay in registers (a CPU compiler, PoCL's, builds far faster without)
#define FORM_LOCAL 0
#define FORM_SUBGROUP 1
#define FORM_PTX 2


#ifdef USE_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#if FORM == FORM_SUBGROUP
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#pragma OPENCL EXTENSION cl_khr_subgroup_shuffle : enable
#endif

// LOAD: element i as a VAL; LOAD4: elements 4 i4 .. 4 i4 + 3 as a VEC4 of VAL (one aligned vector load).
#ifdef ELEM_IS_HALF
#define LOAD(p, i) vload_half((size_t)(i), (p))
#define LOAD4(p, i4) vload_half4((size_t)(i4), (p))
#else
#define LOAD(p, i) ((VAL)(p)[(i)])
#define LOAD4(p, i4) (((global const VEC4*)(p))[(i4)])
#endif

#ifdef VAL_IS_FLOAT
#define VAL_NAN(x) isnan(x)
#else
#define VAL_NAN(x) 0
#endif

// ---- the operator --------------------------------------------------------------------------------

/// (value, position) for argmin and argmax; position LONG_MAX in the identity.
typedef struct {
  VAL value;
  long index;
} kv;

#if defined(OP_ARGMIN) || defined(OP_ARGMAX)
#define POSITIONAL 1
/// NumPy's argmin/argmax: the extreme value wins, equal values the lower position, a NaN wins over
/// numbers and the first NaN over later ones.
inline kv op(kv a, kv b) {
  const int a_nan = VAL_NAN(a.value), b_nan = VAL_NAN(b.value);
#ifdef OP_ARGMIN
  const int better = b.value < a.value, worse = a.value < b.value;
#else
  const int better = a.value < b.value, worse = b.value < a.value;
#endif
  int take_b;
  if (a_nan || b_nan) take_b = b_nan && (!a_nan || b.index < a.index);
  else take_b = better || (!worse && b.index < a.index);
  return take_b ? b : a;
}
inline kv make_acc(VAL x, long i) {
  kv r;
  r.value = x;
  r.index = i;
  return r;
}
/// An output: the position relative to `start`, -1 where nothing was found.
inline long emit(kv a, long start) { return a.index < 0 || a.index == LONG_MAX ? -1 : a.index - start; }
#else
inline ACC op(ACC a, ACC b) {
#if defined(OP_SUM)
  return a + b;
#elif defined(OP_PROD)
  return a * b;
#elif defined(OP_AND)
  return a & b;
#elif defined(OP_OR)
  return a | b;
#elif defined(OP_XOR)
  return a ^ b;
#elif defined(OP_MIN) || defined(OP_MAX)
#ifdef OP_MIN
  const int b_wins = b < a;
#else
  const int b_wins = a < b;
#endif
  return (b_wins || VAL_NAN(b)) && !VAL_NAN(a) ? b : a;  // a NaN propagates
#endif
}
inline ACC make_acc(VAL x, long i) { return (ACC)x; }
inline ACC emit(ACC a, long start) { return a; }
#endif

// ---- the lane exchange ---------------------------------------------------------------------------

#if FORM != FORM_LOCAL
/// The value of lane (lane ^ mask) of the logical warp: sub-group or PTX shuffles, 32 bits at a time.
typedef union {
  ACC value;
  uint words[(sizeof(ACC) + 3) / 4];
} acc_words;
inline ACC exchange(ACC x, uint mask) {
  acc_words in, out;
  in.value = x;
#ifdef UNROLL_LANES
#pragma unroll
#endif
  for (uint w = 0; w < (sizeof(ACC) + 3) / 4; ++w) {
#if FORM == FORM_SUBGROUP
    out.words[w] = sub_group_shuffle_xor(in.words[w], mask);
#else
    uint r;
    __asm__ volatile("shfl.sync.bfly.b32 %0, %1, %2, 0x1f, 0xffffffff;" : "=r"(r) : "r"(in.words[w]), "r"(mask));
    out.words[w] = r;
#endif
  }
  return out.value;
}
#endif

#if FORM == FORM_LOCAL
/// One step of the multi-reduction at lane mask M (a literal): pairs (v[j], v[j + M]), j < M.
#define MULTI_REDUCE_STEP(M)                                                \
  for (uint j = 0; j < (M); ++j) {                                          \
    local ACC* b = s + buffer * 2 * WIDTH;                                  \
    buffer ^= 1;                                                            \
    b[lane] = v[j];                                                         \
    b[lane + WIDTH] = v[j + (M)];                                           \
    barrier(CLK_LOCAL_MEM_FENCE);                                           \
    const ACC lo = v[j], hi = v[j + (M)];                                   \
    const ACC other = b[(lane ^ (M)) + ((lane & (M)) ? WIDTH : 0)];         \
    v[j] = (lane & (M)) ? op(other, hi) : op(lo, other);                    \
  }
#else
#define MULTI_REDUCE_STEP(M)                                                \
  for (uint j = 0; j < (M); ++j) {                                          \
    const ACC lo = v[j], hi = v[j + (M)];                                   \
    const ACC other = exchange((lane & (M)) ? lo : hi, (M));                \
    v[j] = (lane & (M)) ? op(other, hi) : op(lo, other);                    \
  }
#endif

/// The multi-reduction: lane `lane` holds a partial v[j] of each of WIDTH reductions; afterwards it
/// holds reduction `lane`'s total (returned). At each step (mask m = WIDTH/2, ..., 1) a lane keeps
/// one half of its partials and hands the other half to lane ^ m: WIDTH - 1 exchanges and WIDTH - 1
/// operator applications in all, where WIDTH separate butterflies take WIDTH log2 WIDTH of each.
/// FORM_LOCAL takes 4 WIDTH accumulators of local memory per warp (`s`) and, as the paper's
/// section 6 writes it, both halves go to local memory and each lane reads the one it keeps
/// adding, with no swap; two buffers in turn, so one barrier per exchange. Every work-item of the
/// work-group must call it (the barriers).
inline ACC multi_reduce(ACC v[WIDTH], uint lane, local ACC* s) {
  uint buffer = 0;
  (void)buffer;
  (void)s;
#ifdef UNROLL_LANES
  // Each step a literal mask, so that every loop has a constant trip count and unrolls: v stays in
  // registers (a run-time index would put it in memory).
#if WIDTH == 64
  MULTI_REDUCE_STEP(32)
#endif
  MULTI_REDUCE_STEP(16)
  MULTI_REDUCE_STEP(8)
  MULTI_REDUCE_STEP(4)
  MULTI_REDUCE_STEP(2)
  MULTI_REDUCE_STEP(1)
#else
  // A CPU (PoCL): the same steps as loops, which build far faster there.
  for (uint m = WIDTH / 2; m >= 1; m >>= 1) MULTI_REDUCE_STEP(m)
#endif
#if FORM == FORM_LOCAL
  barrier(CLK_LOCAL_MEM_FENCE);  // the buffers may be written again by the caller's next call
#endif
  return v[0];
}

/// One reduction over the work-group (its work-items' values in order of local id): the total in
/// every work-item. `s` holds get_local_size(0) accumulators; every work-item must call it.
inline ACC group_reduce(ACC x, local ACC* s) {
  const uint lid = get_local_id(0), size = get_local_size(0);
  s[lid] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint stride = size / 2; stride > 0; stride >>= 1) {
    if (lid < stride) s[lid] = op(s[lid], s[lid + stride]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const ACC total = s[0];
  barrier(CLK_LOCAL_MEM_FENCE);
  return total;
}

/// Segment s's elements [*b, *e): of length `length` (mode 0), between offsets (mode 1), or the
/// s-th of `segments` even parts of n elements (mode 2).
inline void segment_bounds(int mode, long s, long n, long length, global const long* offsets, long segments, long* b,
                           long* e) {
  if (mode == 0) {
    *b = s * length;
    *e = *b + length;
  } else if (mode == 1) {
    *b = offsets[s];
    *e = offsets[s + 1];
  } else {
    *b = (long)((ulong)n * (ulong)s / (ulong)segments);
    *e = (long)((ulong)n * (ulong)(s + 1) / (ulong)segments);
  }
}
