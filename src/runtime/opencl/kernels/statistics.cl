// statistics.cl -- every statistic of an array in one pass (after common.cl, built with OP_ARGMIN,
// USE_FP64 and SUM_T: ulong for integers, wrapping as NumPy's int64/uint64 sums, double for
// floats). Work-group g folds the g-th of `parts` even parts into one state of sums: the count, the
// sum, the sums of x - shift and (x - shift)^2 (shift: a value near the data, so that the variance
// does not cancel), of |x| and x^2, and the smallest and largest values with their first positions.
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

/// Adds element x at position i (positions come in increasing order: the first of equal extremes
/// stays, the first NaN wins).
inline void stats_push(stats_state* s, VAL x, long i, double shift) {
  const double v = (double)x, d = v - shift;
  s->count += 1;
  s->sum += (SUM_T)x;
  s->s1 += d;
  s->s2 += d * d;
  s->l1 += fabs(v);
  s->squares += v * v;
  const int nan = VAL_NAN(x);
  if (s->min.index == LONG_MAX || x < s->min.value || (nan && !VAL_NAN(s->min.value))) s->min = make_acc(x, i);
  if (s->max.index == LONG_MAX || s->max.value < x || (nan && !VAL_NAN(s->max.value))) s->max = make_acc(x, i);
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
  for (long v = head / 4 + lid; v < body / 4; v += size) {
    const VEC4 x = LOAD4(in, v);
    stats_push(&s, x.s0, 4 * v, shift);
    stats_push(&s, x.s1, 4 * v + 1, shift);
    stats_push(&s, x.s2, 4 * v + 2, shift);
    stats_push(&s, x.s3, 4 * v + 3, shift);
  }
  if (body + lid < e) stats_push(&s, LOAD(in, body + lid), body + lid, shift);
  scratch[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint stride = size / 2; stride > 0; stride >>= 1) {
    if (lid < stride) scratch[lid] = stats_merge(scratch[lid], scratch[lid + stride]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) states[g] = scratch[0];
}
