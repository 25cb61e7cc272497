// statistics.cl -- every statistic of an array in one pass (after common.cl, built with OP_ARGMIN,
// USE_FP64, STATS_VECTORS and SUM_T: ulong for integers, wrapping as NumPy's int64/uint64 sums, double for
// floats). Work-group g folds the g-th of `parts` even parts into one state of sums: the count, the
// sum (of floats: count shift + the sum of x - shift), the sums of x - shift and (x - shift)^2
// (shift: a value near the data, so that the variance does not cancel), of |x| and x^2, and the
// smallest and largest values with their first positions.
// The host turns each state into a mergeable state (statistics_accumulator::from_shifted_sums) and
// merges them in order.

typedef struct {
  long count;
  SUM_T sum;
  double s1, s2, l1, squares;
  kv min, max;
} stats_state;

inline kv take_max(kv a, kv b) {  // argmax with NumPy's rules (op is argmin in this program)
  const int a_nan = VAL_NAN(a.value), b_nan = VAL_NAN(b.value);
  int take_b;
  if (a_nan || b_nan) take_b = b_nan && (!a_nan || b.index < a.index);
  else take_b = a.value < b.value || (!(b.value < a.value) && b.index < a.index);
  return take_b ? b : a;
}

inline stats_state stats_merge(stats_state a, stats_state b) {
  a.count += b.count;
  a.sum += b.sum;
  a.s1 += b.s1;
  a.s2 += b.s2;
  a.l1 += b.l1;
  a.squares += b.squares;
  a.min = op(a.min, b.min);
  a.max = take_max(a.max, b.max);
  return a;
}

/// The exact extremes' rule for element x at position i (positions come in increasing order: the
/// first of equal extremes stays, the first NaN wins).
inline void stats_extremes(stats_state* s, VAL x, long i) {
  const int nan = VAL_NAN(x);
  if (s->min.index == LONG_MAX || x < s->min.value || (nan && !VAL_NAN(s->min.value))) s->min = make_acc(x, i);
  if (s->max.index == LONG_MAX || s->max.value < x || (nan && !VAL_NAN(s->max.value))) s->max = make_acc(x, i);
}

/// Adds element x at position i.
inline void stats_push(stats_state* s, VAL x, long i, double shift) {
  const double v = (double)x, d = v - shift;
  s->count += 1;
#ifndef VAL_IS_FLOAT
  s->sum += (SUM_T)x;
#endif
  s->s1 += d;
  s->s2 += d * d;
  s->l1 += fabs(v);
  s->squares += v * v;
  stats_extremes(s, x, i);
}

/// Adds the four elements of x, at positions first .. first + 3: the vector's own sums first (short
/// dependency chains), then one add each; the extremes by a cheap NaN-blind min and max of the
/// vector, and only a vector that may change them (a new low or high, a NaN -- d1 is then NaN --,
/// the thread's first) takes the exact rule element by element. Float sums are not kept: the
/// kernel derives them from s1 at the end (count shift + s1).
inline void stats_push4(stats_state* s, VEC4 x, long first, double shift) {
  const double v0 = (double)x.s0, v1 = (double)x.s1, v2 = (double)x.s2, v3 = (double)x.s3;
  const double e0 = v0 - shift, e1 = v1 - shift, e2 = v2 - shift, e3 = v3 - shift;
  const double d1 = (e0 + e1) + (e2 + e3);
  s->s1 += d1;
  s->s2 += (e0 * e0 + e1 * e1) + (e2 * e2 + e3 * e3);
  s->l1 += (fabs(v0) + fabs(v1)) + (fabs(v2) + fabs(v3));
  s->squares += (v0 * v0 + v1 * v1) + (v2 * v2 + v3 * v3);
  s->count += 4;
#ifndef VAL_IS_FLOAT
  s->sum += ((SUM_T)x.s0 + (SUM_T)x.s1) + ((SUM_T)x.s2 + (SUM_T)x.s3);
#endif
  VAL low = x.s0, high = x.s0;
  low = x.s1 < low ? x.s1 : low;
  high = high < x.s1 ? x.s1 : high;
  low = x.s2 < low ? x.s2 : low;
  high = high < x.s2 ? x.s2 : high;
  low = x.s3 < low ? x.s3 : low;
  high = high < x.s3 ? x.s3 : high;
  int exact = s->min.index == LONG_MAX || low < s->min.value || s->max.value < high;
#ifdef VAL_IS_FLOAT
  exact = exact || isnan(d1);
#endif
  if (exact) {
    stats_extremes(s, x.s0, first);
    stats_extremes(s, x.s1, first + 1);
    stats_extremes(s, x.s2, first + 2);
    stats_extremes(s, x.s3, first + 3);
  }
}

kernel void statistics_parts(global const ELEM* in, long n, long parts, double shift, global stats_state* states,
                             VAL lowest, VAL highest, local stats_state* scratch) {
  const long g = get_group_id(0);
  const uint lid = get_local_id(0), size = get_local_size(0);
  long b, e;
  segment_bounds(2, g, n, 0, 0, parts, &b, &e);
  stats_state s;
  s.count = 0;
  s.sum = 0;
  s.s1 = s.s2 = s.l1 = s.squares = 0;
  s.min = make_acc(highest, LONG_MAX);
  s.max = make_acc(lowest, LONG_MAX);
  // As fold_by_group (segments.cl): the head one each, aligned groups of 4 as vector loads, the rest.
  const long head = min(e, (b + 3) & ~3L), body = head + ((e - head) & ~3L);
  if (b + lid < head) stats_push(&s, LOAD(in, b + lid), b + lid, shift);
  // STATS_VECTORS vectors loaded before any is folded: the double-precision work would otherwise
  // leave memory idle.
  long v = head / 4 + lid;
  for (; v + (STATS_VECTORS - 1) * (long)size < body / 4; v += STATS_VECTORS * (long)size) {
    VEC4 x[STATS_VECTORS];
#ifdef UNROLL_LANES
#pragma unroll
#endif
    for (int k = 0; k < STATS_VECTORS; ++k) x[k] = LOAD4(in, v + k * (long)size);
#ifdef UNROLL_LANES
#pragma unroll
#endif
    for (int k = 0; k < STATS_VECTORS; ++k) stats_push4(&s, x[k], 4 * (v + k * (long)size), shift);
  }
  for (; v < body / 4; v += size) stats_push4(&s, LOAD4(in, v), 4 * v, shift);
  if (body + lid < e) stats_push(&s, LOAD(in, body + lid), body + lid, shift);
#ifdef VAL_IS_FLOAT
  s.sum = (double)s.count * shift + s.s1;
#endif
  scratch[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint stride = size / 2; stride > 0; stride >>= 1) {
    if (lid < stride) scratch[lid] = stats_merge(scratch[lid], scratch[lid + stride]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) states[g] = scratch[0];
}
