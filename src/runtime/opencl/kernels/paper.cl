// paper.cl -- the multi-reduction paper's section-7 benchmark in OpenCL C (after common.cl, built
// with OP_SUM and ELEM = VAL = ACC = int, float or double): the sum of every run of WIDTH
// consecutive elements of an array, each computed on its own from the input, "in the most naive
// way", so that the time goes into the reductions. A logical warp takes WIDTH consecutive windows
// w0 .. w0 + WIDTH - 1; lane l ends with window w0 + l and writes it (out[i], i < n - WIDTH + 1).

/// The previous best practice: each window by its own butterfly (log2 WIDTH exchanges), WIDTH
/// butterflies per warp. FORM_LOCAL: through local memory, two buffers in turn (2 WIDTH
/// accumulators per warp), one barrier per exchange.
kernel void paper_butterfly(global const ELEM* in, long n, global ACC* out, local ACC* scratch) {
  const uint lane = get_local_id(0) % WIDTH, warp = get_local_id(0) / WIDTH;
  const long w0 = ((long)get_group_id(0) * (get_local_size(0) / WIDTH) + warp) * WIDTH;
  local ACC* s = scratch + warp * 2 * WIDTH;
  uint buffer = 0;
  ACC mine = 0;
  for (uint j = 0; j < WIDTH; ++j) {
    const long i = w0 + j + lane;
    ACC x = i < n ? LOAD(in, i) : 0;
#ifdef UNROLL_LANES
#pragma unroll
#endif
    for (uint m = WIDTH / 2; m >= 1; m >>= 1) {
#if FORM == FORM_LOCAL
      local ACC* b = s + buffer * WIDTH;
      buffer ^= 1;
      b[lane] = x;
      barrier(CLK_LOCAL_MEM_FENCE);
      x = x + b[lane ^ m];
#else
      x = x + exchange(x, m);
#endif
    }
    if (lane == j) mine = x;
  }
  if (w0 + lane + WIDTH <= n) out[w0 + lane] = mine;
}

/// The multi-reduction: lane l loads element l of each of the warp's WIDTH windows, and one
/// multi-reduction (WIDTH - 1 exchanges) leaves window w0 + l in lane l.
kernel void paper_multi_reduce(global const ELEM* in, long n, global ACC* out, local ACC* scratch) {
  const uint lane = get_local_id(0) % WIDTH, warp = get_local_id(0) / WIDTH;
  const long w0 = ((long)get_group_id(0) * (get_local_size(0) / WIDTH) + warp) * WIDTH;
  ACC v[WIDTH];
#ifdef UNROLL_LANES
#pragma unroll
#endif
  for (uint j = 0; j < WIDTH; ++j) {
    const long i = w0 + j + lane;
    v[j] = i < n ? LOAD(in, i) : 0;
  }
  const ACC total = multi_reduce(v, lane, scratch + warp * 4 * WIDTH);
  if (w0 + lane + WIDTH <= n) out[w0 + lane] = total;
}
