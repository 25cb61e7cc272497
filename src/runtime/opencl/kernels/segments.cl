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

/// A tile of segments_staged.
typedef struct {
  long first;   // the tile's first element
  long end;     // one past its last
  long vector;  // the first vector staged: elements 4 vector ..
  int vectors;  // how many (whole vectors inside the array)
  int fits;
} staged_tile;

/// Tile t's span; its vectors into `next` (work-item lid takes vectors lid, lid + size, ...) when they fit.
inline staged_tile stage_ahead(global const ELEM* in, long n, int mode, long length, global const long* offsets,
                               long segments, long t, VEC4 next[STAGED_VECTORS]) {
  const uint lid = get_local_id(0), size = get_local_size(0);
  staged_tile r;
  long unused;
  segment_bounds(mode, t * size, n, length, offsets, segments, &r.first, &unused);
  segment_bounds(mode, min((t + 1) * (long)size, segments) - 1, n, length, offsets, segments, &unused, &r.end);
  r.vector = r.first / 4;
  const long last = min((r.end + 3) / 4, n / 4);  // whole vectors only
  const long vectors = max(last - r.vector, 0L);
  r.fits = vectors <= (long)size * STAGED_VECTORS;
  r.vectors = r.fits ? (int)vectors : 0;
#ifdef UNROLL_LANES
#pragma unroll
#endif
  for (int k = 0; k < STAGED_VECTORS; ++k) {
    const int c = (int)lid + k * (int)size;
    if (c < r.vectors) next[k] = LOAD4(in, r.vector + c);
  }
  return r;
}

// Component u of vector x, at position p, where p lies in the segment [b, e).
#define STAGED_TAKE(x, u, p) \
  if ((p) >= b && (p) < e) a = op(a, make_acc((x).u, (p)))

/// Short segments (a mean of at most a few dozen elements): tiles of get_local_size(0) consecutive
/// segments, one a work-item; work-group g takes tiles g, g + groups, ... Each tile's elements come
/// into local memory as whole aligned vectors of 4 (STAGED_VECTORS a work-item at most), loaded into
/// registers while the group folds the tile before, so that their latency hides behind the folds.
/// Each work-item then folds its own segment from local memory a vector at a time (the first and
/// the last vector masked), in order. Elements after the array's last whole vector come from global
/// memory. A tile whose elements do not fit is folded from global memory: segments of at most
/// STAGED_ALONE elements by their work-items, longer ones by the whole group in turn (fold_by_group,
/// above). `stage`: STAGED_VECTORS vectors a work-item; `scratch`: one accumulator a work-item.
kernel void segments_staged(global const ELEM* in, long n, int mode, long length, global const long* offsets,
                            long segments, global OUT* out, ACC init, local VEC4* stage, local ACC* scratch) {
  const uint lid = get_local_id(0), size = get_local_size(0);
  const long tiles = (segments + size - 1) / size, groups = get_num_groups(0);
  VEC4 next[STAGED_VECTORS];
  staged_tile ahead = stage_ahead(in, n, mode, length, offsets, segments, get_group_id(0), next);
  for (long t = get_group_id(0); t < tiles; t += groups) {
    const staged_tile tile = ahead;
    barrier(CLK_LOCAL_MEM_FENCE);  // the tile before has been read
#ifdef UNROLL_LANES
#pragma unroll
#endif
    for (int k = 0; k < STAGED_VECTORS; ++k) {
      const int c = (int)lid + k * (int)size;
      if (c < tile.vectors) stage[c] = next[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t + groups < tiles) ahead = stage_ahead(in, n, mode, length, offsets, segments, t + groups, next);
    const long s = t * size + lid;
    long b = 0, e = 0;
    if (s < segments) segment_bounds(mode, s, n, length, offsets, segments, &b, &e);
    ACC a = init;
    if (tile.fits) {
      const long staged_end = 4 * (tile.vector + tile.vectors);
      if (b < min(e, staged_end)) {
        const int c0 = (int)(b / 4 - tile.vector), c1 = (int)((min(e, staged_end) - 1) / 4 - tile.vector);
        long p = 4 * (tile.vector + c0);
        VEC4 x = stage[c0];
        STAGED_TAKE(x, s0, p);
        STAGED_TAKE(x, s1, p + 1);
        STAGED_TAKE(x, s2, p + 2);
        STAGED_TAKE(x, s3, p + 3);
        for (int c = c0 + 1; c < c1; ++c) {
          x = stage[c];
          p += 4;
          a = op(a, make_acc(x.s0, p));
          a = op(a, make_acc(x.s1, p + 1));
          a = op(a, make_acc(x.s2, p + 2));
          a = op(a, make_acc(x.s3, p + 3));
        }
        if (c1 > c0) {
          x = stage[c1];
          p = 4 * (tile.vector + c1);
          STAGED_TAKE(x, s0, p);
          STAGED_TAKE(x, s1, p + 1);
          STAGED_TAKE(x, s2, p + 2);
          STAGED_TAKE(x, s3, p + 3);
        }
      }
      for (long i = max(b, staged_end); i < e; ++i) a = op(a, make_acc(LOAD(in, i), i));
      if (s < segments) out[s] = emit(a, b);
    } else {
      if (e - b <= STAGED_ALONE) {
        for (long i = b; i < e; ++i) a = op(a, make_acc(LOAD(in, i), i));
        if (s < segments) out[s] = emit(a, b);
      }
      for (long k = t * size; k < min((t + 1) * (long)size, segments); ++k) {
        long kb, ke;
        segment_bounds(mode, k, n, length, offsets, segments, &kb, &ke);
        if (ke - kb <= STAGED_ALONE) continue;
        const ACC total = fold_by_group(in, kb, ke, init, scratch);
        if (lid == 0) out[k] = emit(op(init, total), kb);
      }
    }
  }
}
