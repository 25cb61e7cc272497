// window.cl -- sliding windows (after common.cl): out[i] = op(init, in[i] op ... op in[i + W - 1]).
// Positions (argmin/argmax) are written relative to the window's start.

/// out[i] = op(init, in[i] op ... op in[i + W - 1]) for i < n - W + 1, W > 0, any associative
/// operator (no inverse): van Herk / Gil-Werman in local memory. A work-group takes CHUNK x
/// get_local_size(0) consecutive windows and their inputs (tile + W - 1 elements), cut into chunks
/// of CHUNK; work-item t writes the windows starting in chunk t. A window is the suffix of its
/// first chunk, the fold of the whole chunks in between (the chunk folds' sliding fold, by
/// doubling over local memory) and the prefix of its last chunk; windows of at most CHUNK elements
/// are folded directly. Local buffers: vals (tile + W - 1 values), chunk folds A, doubling buffers
/// D and D2, middles R (a chunk count each), stage (tile outputs, written out coalesced). vals and
/// stage are padded, one slot after every CHUNK (PAD): work-item t reads and writes items t CHUNK
/// + j, which would otherwise fall into the same few local-memory banks across a warp.
#define PAD(i) ((i) + (i) / CHUNK)
kernel void window_tile(global const ELEM* in, long n, long window, global OUT* out, ACC init, local VAL* vals,
                        local ACC* A, local ACC* D, local ACC* D2, local ACC* R, local OUT* stage) {
  const uint lid = get_local_id(0), size = get_local_size(0);
  const long windows = n - window + 1, tile = (long)size * CHUNK;
  const long t0 = (long)get_group_id(0) * tile;
  const long tile_windows = min(tile, windows - t0), span = tile_windows + window - 1;
  // Unrolled so that a work-item's loads are in flight together, not one latency each.
#ifdef UNROLL_LANES
#pragma unroll 8
#endif
  for (long i = lid; i < span; i += size) vals[PAD(i)] = LOAD(in, t0 + i);
  barrier(CLK_LOCAL_MEM_FENCE);
  const long chunks = (span + CHUNK - 1) / CHUNK;
  const long q = (window - 1) / CHUNK;  // W - 1 = q CHUNK + r
  const long middle = q > 1 ? q - 1 : 0;  // whole chunks between a window's first and last, at least
  for (long c = lid; c < chunks; c += size) {
    const long b = c * CHUNK, e = min(b + CHUNK, span);
    ACC a = make_acc(vals[PAD(b)], t0 + b);
    for (long i = b + 1; i < e; ++i) a = op(a, make_acc(vals[PAD(i)], t0 + i));
    A[c] = a;
    D[c] = a;
    R[c] = init;
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  // R[c] = A[c] op ... op A[c + middle - 1]: D holds folds of s chunks, doubled while s <= middle;
  // R takes them along middle's binary digits, in array order.
  long covered = 0;
  for (long s = 1; s <= middle; s <<= 1) {
    if (middle & s) {
      for (long c = lid; c < chunks; c += size)
        if (c + covered < chunks) R[c] = op(R[c], D[c + covered]);
      covered += s;
    }
    if (2 * s <= middle) {
      for (long c = lid; c < chunks; c += size) D2[c] = c + s < chunks ? op(D[c], D[c + s]) : D[c];
      barrier(CLK_LOCAL_MEM_FENCE);
      for (long c = lid; c < chunks; c += size) D[c] = D2[c];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  const long base = (long)lid * CHUNK;
  if (base < tile_windows) {
    if (window <= CHUNK) {
      for (long j = 0; j < CHUNK && base + j < tile_windows; ++j) {
        ACC a = init;
        for (long i = base + j; i < base + j + window; ++i) a = op(a, make_acc(vals[PAD(i)], t0 + i));
        stage[PAD(base + j)] = emit(a, t0 + base + j);
      }
    } else {
      ACC suffix[CHUNK];
      suffix[CHUNK - 1] = make_acc(vals[PAD(base + CHUNK - 1)], t0 + base + CHUNK - 1);
#ifdef UNROLL_LANES
#pragma unroll
#endif
      for (int j = CHUNK - 2; j >= 0; --j) suffix[j] = op(make_acc(vals[PAD(base + j)], t0 + base + j), suffix[j + 1]);
      const long t = lid;
      const ACC short_middle = q > 1 ? R[t + 1] : init;                       // chunks t+1 .. t+q-1
      const ACC long_middle = q > 1 ? op(R[t + 1], A[t + q]) : A[t + 1];    // chunks t+1 .. t+q
      long e = base + window - 1, last = e / CHUNK;
      ACC prefix = make_acc(vals[PAD(last * CHUNK)], t0 + last * CHUNK);
      for (long i = last * CHUNK + 1; i <= e; ++i) prefix = op(prefix, make_acc(vals[PAD(i)], t0 + i));
#ifdef UNROLL_LANES
#pragma unroll
#endif
      for (int j = 0; j < CHUNK; ++j) {
        if (base + j < tile_windows) {
          if (j > 0) {
            ++e;
            if (e % CHUNK == 0) {
              ++last;
              prefix = make_acc(vals[PAD(e)], t0 + e);
            } else {
              prefix = op(prefix, make_acc(vals[PAD(e)], t0 + e));
            }
          }
          const ACC between = last - t - 1 == q ? long_middle : short_middle;
          stage[PAD(base + j)] = emit(op(init, op(op(suffix[j], between), prefix)), t0 + base + j);
        }
      }
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE);
  for (long i = lid; i < tile_windows; i += size) out[t0 + i] = stage[PAD(i)];
}

// Windows too long for local memory: folds of 2^k elements doubled over global memory and taken
// along W's binary digits (2 log2 W passes over n accumulators).

/// d[i] = in[i] as an accumulator (its position i).
kernel void window_load(global const ELEM* in, long n, global ACC* d) {
  const long i = get_global_id(0);
  if (i < n) d[i] = make_acc(LOAD(in, i), i);
}
/// r[i] = d[i + covered] (first) or r[i] op d[i + covered], for i < count.
kernel void window_take(global ACC* r, global const ACC* d, long covered, long count, int first) {
  const long i = get_global_id(0);
  if (i < count) r[i] = first ? d[i + covered] : op(r[i], d[i + covered]);
}
/// to[i] = from[i] op from[i + s] for i < count (folds of 2s elements from folds of s).
kernel void window_double(global ACC* to, global const ACC* from, long s, long count) {
  const long i = get_global_id(0);
  if (i < count) to[i] = op(from[i], from[i + s]);
}
/// out[i] = op(init, r[i]) as an output (positions relative to i), i < count.
kernel void window_emit(global const ACC* r, long count, global OUT* out, ACC init) {
  const long i = get_global_id(0);
  if (i < count) out[i] = emit(op(init, r[i]), i);
}
