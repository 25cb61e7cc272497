"""Independent NumPy references for every function (written from NumPy's and OpenCV's documented
behaviour, not from multireduce's code)."""

import numpy as np

OPS = ("sum", "prod", "min", "max", "argmin", "argmax", "and", "or", "xor")
INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32", "float64")


def ops_for(dtype):
    return OPS if dtype in INT_DTYPES else OPS[:6]


def result_dtype(op, dtype):
    d = np.dtype(dtype)
    if op in ("argmin", "argmax"):
        return np.dtype(np.int64)
    if op in ("sum", "prod") and d.kind in "iu":
        return np.dtype(np.int64) if d.kind == "i" else np.dtype(np.uint64)
    return d


def identity(op, dtype):
    d = np.dtype(dtype)
    if op == "sum" or op == "or" or op == "xor":
        return np.zeros((), result_dtype(op, dtype))[()]
    if op == "prod":
        return np.ones((), result_dtype(op, dtype))[()]
    if op == "and":
        return np.array(-1).astype(d)[()] if d.kind == "i" else np.array(np.iinfo(d).max, d)[()]
    if op == "min":
        return np.array(np.inf, d)[()] if d.kind == "f" else np.array(np.iinfo(d).max, d)[()]
    if op == "max":
        return np.array(-np.inf, d)[()] if d.kind == "f" else np.array(np.iinfo(d).min, d)[()]
    return np.int64(-1)


def reduce(x, op, axis=None):
    """NumPy's reduction (identity for an empty reduction; argmin/argmax -1)."""
    rd = result_dtype(op, x.dtype)
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    axis %= x.ndim
    if x.shape[axis] == 0:
        shape = x.shape[:axis] + x.shape[axis + 1:]
        return np.full(shape, identity(op, x.dtype), dtype=rd)
    with np.errstate(all="ignore"):
        if op == "sum":
            return np.sum(x, axis=axis, dtype=rd)
        if op == "prod":
            return np.prod(x, axis=axis, dtype=rd)
        if op == "min":
            return np.min(x, axis=axis)
        if op == "max":
            return np.max(x, axis=axis)
        if op == "argmin":
            return np.argmin(x, axis=axis).astype(np.int64)
        if op == "argmax":
            return np.argmax(x, axis=axis).astype(np.int64)
        ufunc = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op]
        return ufunc.reduce(x, axis=axis)


def segmented(x, op, offsets):
    rd = result_dtype(op, x.dtype)
    out = np.empty(len(offsets) - 1, dtype=rd)
    for s in range(len(offsets) - 1):
        out[s] = reduce(x[offsets[s]:offsets[s + 1]], op)
    return out


def window(x, w, op):
    if len(x) < w:
        return np.empty(0, dtype=result_dtype(op, x.dtype))
    view = np.lib.stride_tricks.sliding_window_view(x, w)
    return reduce(view, op, axis=-1)


def hamming(query, train):
    """(nq, nt) Hamming distances."""
    if len(query) == 0 or len(train) == 0:
        return np.zeros((len(query), len(train)), np.int32)
    x = np.bitwise_xor(query[:, None, :], train[None, :, :])
    return np.unpackbits(x, axis=-1).sum(-1).astype(np.int32)


def knn(query, train, k):
    """(dist, idx): the k nearest, by distance then lower index; -1 past the training set."""
    d = hamming(query, train)
    nq, nt = d.shape
    idx = np.full((nq, k), -1, np.int32)
    dist = np.full((nq, k), -1, np.int32)
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    m = min(k, nt)
    idx[:, :m] = order[:, :m]
    dist[:, :m] = np.take_along_axis(d, order[:, :m], axis=1)
    return dist, idx


def match(query, train, ratio=None, margin=None, max_distance=None, cross_check=False):
    k = 2 if (ratio is not None or margin is not None) else 1
    dist, idx = knn(query, train, k)
    d = hamming(query, train)
    rows = []
    for q in range(len(query)):
        t = idx[q, 0]
        if t < 0:
            continue
        d1 = dist[q, 0]
        has_second = k > 1 and idx[q, 1] >= 0
        if ratio is not None and has_second and not (d1 < ratio * dist[q, 1]):
            continue
        if margin is not None and has_second and not (dist[q, 1] - d1 > margin):
            continue
        if max_distance is not None and d1 > max_distance:
            continue
        if cross_check and int(np.argmin(d[:, t])) != q:
            continue
        rows.append((q, t, d1))
    return np.array(rows, dtype=np.int32).reshape(-1, 3)


def statistics(x):
    x = x.reshape(-1)
    wide = x.astype(np.float64)
    sum_dtype = np.int64 if x.dtype.kind == "i" else np.uint64 if x.dtype.kind == "u" else np.float64
    n = x.size
    with np.errstate(all="ignore"):
        return dict(
            count=n,
            sum=np.sum(x, dtype=sum_dtype),
            mean=wide.mean() if n else np.nan,
            var=wide.var() if n else np.nan,
            std=wide.std() if n else np.nan,
            min=np.min(x) if n else identity("min", x.dtype),
            argmin=int(np.argmin(x)) if n else -1,
            max=np.max(x) if n else identity("max", x.dtype),
            argmax=int(np.argmax(x)) if n else -1,
            l1=np.abs(wide).sum(),
            l2=np.sqrt((wide * wide).sum()),
        )
