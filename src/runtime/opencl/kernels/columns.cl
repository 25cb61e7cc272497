// columns.cl -- an axis that is not the last (after common.cl): the array seen as (outer, rows,
// inner), its columns folded row after row.

/// An axis that is not the last, the array seen as (outer, rows, inner): work-item (o, i) folds
/// rows [row_begin, row_end) of column i of block o, one row after another (positions: the row),
/// into partials[first + o * inner + i]; the host folds the parts of the rows in order.
kernel void columns(global const ELEM* in, long outer, long rows, long inner, long row_begin, long row_end,
                    global ACC* partials, long first, ACC init) {
  const long c = get_global_id(0);
  if (c >= outer * inner) return;
  const long o = c / inner, i = c % inner;
  global const ELEM* column = in + o * rows * inner + i;
  ACC a = init;
  for (long k = row_begin; k < row_end; ++k) a = op(a, make_acc(LOAD(column, k * inner), k));
  partials[first + c] = a;
}
