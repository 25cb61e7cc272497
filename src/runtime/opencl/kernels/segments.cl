// segments.cl -- reductions of one piece of an array in device memory (after common.cl): segments
// (fixed length, offsets) and the parts of a whole array. Every kernel takes the operator's
// identity as `init`; positions (argmin/argmax) are counted from the piece's first element and
// written relative to the segment's start.

/// Many short segments: each logical warp takes WIDTH consecutive segments; lane l folds elements
/// l, l + WIDTH, ... of every one of them (coalesced), then the multi-reduction leaves segment
/// first + l's total in lane l, which writes it. The segments' bounds go through local memory
/// (`bounds`: 2 WIDTH per warp), each read once; the first and second WIDTH elements of every
/// segment are loaded in two passes of independent loads, the rest of longer segments after.
/// `scratch`: 4 WIDTH accumulators per warp.
kernel void segments_by_warp(global const ELEM* in, long n, int mode, long length, global const long* offsets,
                             long segments, global OUT* out, ACC init, local ACC* scratch, local long* bounds) {
  const uint lane = get_local_id(0) % WIDTH, warp = get_local_id(0) / WIDTH;
  const long first = ((long)get_group_id(0) * (get_local_size(0) / WIDTH) + warp) * WIDTH;
  long my_b = 0, my_e = 0;
  if (first + lane < segments) segment_bounds(mode, first + lane, n, length, offsets, segments, &my_b, &my_e);
  local long* b = bounds + warp * 2 * WIDTH;
  local long* e = b + WIDTH;
  b[lane] = my_b;
  e[lane] = my_e;
  barrier(CLK_LOCAL_MEM_FENCE);
  ACC v[WIDTH];
#ifdef UNROLL_LANES
#pragma unroll
#endif
  for (uint j = 0; j < WIDTH; ++j) {
    const long i = b[j] + lane;
    v[j] = i < e[j] ? op(init, make_acc(LOAD(in, i), i)) : init;
  }
#ifdef UNROLL_LANES
#pragma unroll
#endif
  for (uint j = 0; j < WIDTH; ++j) {
    const long i = b[j] + lane + WIDTH;
    if (i < e[j]) v[j] = op(v[j], make_acc(LOAD(in, i), i));
  }
#ifdef UNROLL_LANES
#pragma unroll
#endif
  for (uint j = 0; j < WIDTH; ++j)
    for (long i = b[j] + lane + 2 * WIDTH; i < e[j]; i += WIDTH) v[j] = op(v[j], make_acc(LOAD(in, i), i));
  const ACC total = multi_reduce(v, lane, scratch + warp * 4 * WIDTH);
  if (first + lane < segments) out[first + lane] = emit(op(init, total), my_b);
}

/// The fold of one segment by a whole work-group: the elements before the first multiple of 4
/// (positions in the buffer) one each, then work-item t takes the aligned groups of 4 elements t,
/// t + size, ... as vector loads into four accumulators, then the rest one each; the group
/// reduces the accumulators.
inline ACC fold_by_group(global const ELEM* in, long b, long e, ACC init, local ACC* scratch) {
  const long size = get_local_size(0), lid = get_local_id(0);
  ACC a0 = init, a1 = init, a2 = init, a3 = init;
  const long head = min(e, (b + 3) & ~3L), body = head + ((e - head) & ~3L);
  if (b + lid < head) a0 = make_acc(LOAD(in, b + lid), b + lid);
  for (long v = head / 4 + lid; v < body / 4; v += size) {
    const VEC4 x = LOAD4(in, v);
    const long i = 4 * v;
    a0 = op(a0, make_acc(x.s0, i));
    a1 = op(a1, make_acc(x.s1, i + 1));
    a2 = op(a2, make_acc(x.s2, i + 2));
    a3 = op(a3, make_acc(x.s3, i + 3));
  }
  if (body + lid < e) a3 = op(a3, make_acc(LOAD(in, body + lid), body + lid));
  return group_reduce(op(op(a0, a1), op(a2, a3)), scratch);
}

/// Long segments: one work-group per segment. `scratch`: one accumulator per work-item.
kernel void segments_by_group(global const ELEM* in, long n, int mode, long length, global const long* offsets,
                              long segments, global OUT* out, ACC init, local ACC* scratch) {
  const long s = get_group_id(0);
  long b, e;
  segment_bounds(mode, s, n, length, offsets, segments, &b, &e);
  const ACC total = fold_by_group(in, b, e, init, scratch);
  if (get_local_id(0) == 0) out[s] = emit(op(init, total), b);
}

/// A whole array: work-group g folds the g-th of `parts` even parts into partials[g] (accumulators,
/// absolute positions); the host folds the partials in order.
kernel void parts_by_group(global const ELEM* in, long n, long parts, global ACC* partials, ACC init,
                           local ACC* scratch) {
  const long g = get_group_id(0);
  long b, e;
  segment_bounds(2, g, n, 0, 0, parts, &b, &e);
  const ACC total = fold_by_group(in, b, e, init, scratch);
  if (get_local_id(0) == 0) partials[g] = total;
}
