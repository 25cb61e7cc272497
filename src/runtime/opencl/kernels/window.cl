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

// ---- streamed: windows of 2 CHUNK + 1 elements and more, up to what the rings hold ----------------

#define WRAP(i, size) ((i) < 0 ? (i) + (size) : (i) >= (size) ? (i) - (size) : (i))
#define SPAD(i) ((i) + (i) / 32)

/// Work-item t's CHUNK inputs of the tile at o0: positions o0 + CHUNK t + j, as vectors of 4 where
/// all are inside the array (o0 + CHUNK t is a multiple of 4); those past the end read as 0.
inline void stream_load(global const ELEM* in, long n, long o0, VAL v[CHUNK]) {
  const long p0 = o0 + (long)get_local_id(0) * CHUNK;
  if (p0 + CHUNK <= n) {
#ifdef UNROLL_LANES
#pragma unroll
#endif
    for (int k = 0; k < CHUNK / 4; ++k) {
      const VEC4 y = LOAD4(in, p0 / 4 + k);
      v[4 * k] = y.s0;
      v[4 * k + 1] = y.s1;
      v[4 * k + 2] = y.s2;
      v[4 * k + 3] = y.s3;
    }
  } else {
#ifdef UNROLL_LANES
#pragma unroll
#endif
    for (int j = 0; j < CHUNK; ++j) v[j] = p0 + j < n ? LOAD(in, p0 + j) : (VAL)0;
  }
}

/// Work-item t's chunk of the tile at o0 (its inputs v): the suffix folds S into the ring of
/// positions (the tile's first at `base`), the chunk's fold A into the ring of chunk folds (the
/// tile's first at `block_base`; each fold in two slots, k and k + block_ring), the prefix folds P
/// into x.
inline void stream_fold(local ACC* suffix, local ACC* folds, int base, int block_base, int ring, int block_ring, long o0,
                        const VAL v[CHUNK], ACC x[CHUNK]) {
  const int t = get_local_id(0);
  const long p0 = o0 + (long)t * CHUNK;
  const int mine = WRAP(base + t * CHUNK, ring);  // a chunk never straddles the ring's end
  ACC s = make_acc(v[CHUNK - 1], p0 + CHUNK - 1);
  suffix[SPAD(mine + CHUNK - 1)] = s;
#ifdef UNROLL_LANES
#pragma unroll
#endif
  for (int j = CHUNK - 2; j >= 0; --j) {
    s = op(make_acc(v[j], p0 + j), s);
    suffix[SPAD(mine + j)] = s;
  }
  x[0] = make_acc(v[0], p0);
#ifdef UNROLL_LANES
#pragma unroll
#endif
  for (int j = 1; j < CHUNK; ++j) x[j] = op(x[j - 1], make_acc(v[j], p0 + j));
  const int slot = WRAP(block_base + t, block_ring);
  folds[slot] = folds[slot + block_ring] = x[CHUNK - 1];  // twice: read back without wrapping
}

#if FORM != FORM_LOCAL
/// van Herk's scans over the chunk folds within groups of `group` lanes (a power of 2, at most a
/// warp), by lane exchanges: work-item t's chunk fold `a` folded with the ones before it in its
/// group into before[slot], with the ones after it into after[slot], and (by the group's first
/// lane) the group's fold into group_folds[slot / group]. `slot`: t's place in the chunk ring, whose
/// groups start at multiples of `group`. Every work-item calls it (the exchanges are the warp's).
inline void stream_group_scans(ACC a, int group, int slot, local ACC* before, local ACC* after,
                               local ACC* group_folds) {
  const uint lane = get_local_id(0) % WIDTH;
  ACC prefix = a, suffix = a, total = a;  // within the aligned block of d lanes that holds this one
  for (int d = 1; d < group; d *= 2) {
    const ACC other = exchange(total, (uint)d);
    if (lane & (uint)d) {  // the block before this one
      prefix = op(other, prefix);
      total = op(other, total);
    } else {  // the block after it
      suffix = op(suffix, other);
      total = op(total, other);
    }
  }
  before[slot] = prefix;
  after[slot] = suffix;
  if ((lane & (uint)(group - 1)) == 0) group_folds[slot / group] = suffix;
}
#endif

/// The middle of the windows of chunk c (at `slot` of the chunk ring): the folds of chunks
/// c - q + 1 .. c - 1. The shuffle forms read it as van Herk's: the suffix of its first group,
/// the groups between, the prefix of its last group (`group` < q - 1, so the two differ); the
/// local-memory form, which would need a third barrier for the scans, folds the q - 1 chunks.
inline ACC stream_middle(local const ACC* folds, int slot, int block_ring, int q, int group,
                         local const ACC* group_before, local const ACC* group_after, local const ACC* group_folds) {
#if FORM == FORM_LOCAL
  local const ACC* before = folds + slot + block_ring;  // before[-k]: chunk c - k
  ACC middle = before[-1];
  for (int k = 2; k < q; ++k) middle = op(before[-k], middle);
  return middle;
#else
  if (q == 2) return folds[slot + block_ring - 1];
  const int from = WRAP(slot - q + 1, block_ring), to = WRAP(slot - 1, block_ring);
  const int unwrapped = slot + block_ring, groups = block_ring / group;  // the ring holds whole groups
  const int between = (unwrapped - 1) / group - (unwrapped - q + 1) / group - 1;
  ACC middle = group_after[from];
  for (int k = 1, g = from / group + 1; k <= between; ++k, ++g) middle = op(middle, group_folds[g >= groups ? g - groups : g]);
  return op(middle, group_before[to]);
#endif
}

#define VECTOR4_(t) t##4
#define VECTOR4(t) VECTOR4_(t)
/// Outputs [lo, hi) of the tile, staged at SPAD(o - shift), to global memory: 4 at a time where
/// aligned (the buffer's start is), the up to 3 at either end one by one.
inline void stream_store(global OUT* out, local const OUT* stage, long lo, long hi, long shift) {
  const int t = get_local_id(0), size = get_local_size(0);
  const long a0 = min((lo + 3) & ~3L, hi), a1 = max(hi & ~3L, a0);
  if (t < 3 && lo + t < a0) out[lo + t] = stage[SPAD((int)(lo + t - shift))];
  if (t >= 3 && t < 6 && a1 + t - 3 < hi) out[a1 + t - 3] = stage[SPAD((int)(a1 + t - 3 - shift))];
  const int vectors = (int)((a1 - a0) / 4), first = (int)(a0 - shift);
  for (int m = t; m < vectors; m += size) {
    const int i = first + 4 * m;
    ((global VECTOR4(OUT)*)out)[a0 / 4 + m] =
        (VECTOR4(OUT))(stage[SPAD(i)], stage[SPAD(i + 1)], stage[SPAD(i + 2)], stage[SPAD(i + 3)]);
  }
}

/// out[i] = op(init, in[i] op ... op in[i + W - 1]) for 2 CHUNK <= W - 1 <= `ring` - tile, streamed:
/// work-group g walks a contiguous run of tiles (get_local_size(0) x CHUNK positions) and each tile
/// writes the windows that END in it, so every input is loaded once (window_tile loads the W - 1
/// inputs two tiles share twice). Work-item t holds the inputs of chunk t of the tile in registers
/// (the next tile's come in while it folds this one) and turns them into their prefix folds P
/// (kept) and suffix folds S (into a ring in local memory that still holds the W - 1 positions
/// before the tile); the chunk's fold A goes into a ring of chunk folds. A window ending at
/// position j of chunk c starts in chunk c - q (j >= r) or c - q - 1 (j < r), W - 1 = q CHUNK + r:
///     window = S[its start]  op  A[c - q + 1 .. c - 1] (op A[c - q] before it, j < r)  op  P[j]
/// in array order (any associative operator). The shuffle forms read the middle as van Herk's,
/// from scans of the chunk folds within groups of `group` lanes (stream_group_scans, stream_middle).
/// A run's first tile is preceded by the tiles whose positions its windows read, folded only into
/// the rings. Local buffers: the position ring (`ring` slots, padded one every 32), the chunk ring
/// (`block_ring` slots, a multiple of 32, each fold twice so that the q folds before a chunk are
/// read without wrapping), the scans' rings (`block_ring` slots each, the group folds' a slot a
/// group; one slot each in the local-memory form, which does not use them), the tile's outputs
/// (padded), written out 4 at a time. Two barriers a tile.
kernel void window_stream(global const ELEM* in, long n, long window, global OUT* out, ACC init, int ring,
                          int block_ring, int group, local ACC* suffix, local ACC* folds, local ACC* group_before,
                          local ACC* group_after, local ACC* group_folds, local OUT* stage) {
  const int t = get_local_id(0), size = get_local_size(0), tile = size * CHUNK;
  const long tiles = (n + tile - 1) / tile, groups = get_num_groups(0), g = get_group_id(0);
  const long first_tile = g * tiles / groups, end_tile = (g + 1) * tiles / groups;
  if (first_tile >= end_tile) return;  // the whole work-group
  const int w1 = (int)(window - 1), q = w1 / CHUNK, r = w1 % CHUNK;
  VAL v[CHUNK], next[CHUNK];
  ACC x[CHUNK];
  // The tiles before the run that hold the W - 1 positions and q + 1 chunks before its first.
  for (long k = min(first_tile, ((long)(q + 1) * CHUNK + tile - 1) / tile); k >= 1; --k) {
    const long before = first_tile - k;
    stream_load(in, n, before * tile, v);
    const int before_base = (int)(before * size % block_ring);
    stream_fold(suffix, folds, (int)(before * tile % ring), before_base, ring, block_ring, before * tile, v, x);
#if FORM != FORM_LOCAL
    stream_group_scans(x[CHUNK - 1], group, WRAP(before_base + t, block_ring), group_before, group_after, group_folds);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  int base = (int)(first_tile * tile % ring), block_base = (int)(first_tile * size % block_ring);
  stream_load(in, n, first_tile * tile, next);
  for (long ti = first_tile; ti < end_tile; ++ti) {
    const long o0 = ti * tile;
#ifdef UNROLL_LANES
#pragma unroll
#endif
    for (int j = 0; j < CHUNK; ++j) v[j] = next[j];
    if (ti + 1 < end_tile) stream_load(in, n, o0 + tile, next);
    stream_fold(suffix, folds, base, block_base, ring, block_ring, o0, v, x);
#if FORM != FORM_LOCAL
    stream_group_scans(x[CHUNK - 1], group, WRAP(block_base + t, block_ring), group_before, group_after, group_folds);
#endif
    barrier(CLK_LOCAL_MEM_FENCE);
    const long first_end = o0 + (long)t * CHUNK;  // the windows ending at first_end + j
    if (first_end + CHUNK - 1 >= w1 && first_end < n) {
      const int slot = WRAP(block_base + t, block_ring);
      const ACC middle = stream_middle(folds, slot, block_ring, q, group, group_before, group_after, group_folds);
      const ACC middle_long = op(folds[slot + block_ring - q], middle);
      const int start = WRAP(base + t * CHUNK - w1, ring);
#ifdef UNROLL_LANES
#pragma unroll
#endif
      for (int j = 0; j < CHUNK; ++j) {
        const int at = start + j >= ring ? start + j - ring : start + j;
        const ACC y = op(op(suffix[SPAD(at)], j >= r ? middle : middle_long), x[j]);
        stage[SPAD(t * CHUNK + j)] = emit(op(init, y), first_end + j - w1);
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    stream_store(out, stage, max(o0 - w1, 0L), min(o0 + tile - w1, n - w1), o0 - w1);
    base = WRAP(base + tile, ring);
    block_base = WRAP(block_base + size, block_ring);
  }
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
