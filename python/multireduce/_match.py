"""The Hamming matcher of binary descriptors: knn_hamming and match (see the package's doc and
docs/match.md). One path, as the reductions' (_api): the descriptor sets imported as Operands, one
_core.knn call per search. Host arrays take backend "auto" as the runtime chooses (the GPU when it
runs the search: it is compute-bound, so a host array's upload is cheap beside it); device arrays
run on their GPU, or on host copies for "cpu" and, for "auto", when the GPU does not run the search.
"""

from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from . import _core
from ._arrays import operand
from ._calls import BACKENDS, INT32_MAX, bounded, check_backend, flag, integer, real
from ._records import HOST, Operand
from ._results import address_of, empty, finish, host_copy, like_input, to_numpy


def integer_below_zero(value, name: str) -> bool:
    """Whether an integer argument is negative (TypeError for what is not an integer)."""
    return integer(value, name) < 0


def _descriptors(query, train, stream) -> Tuple[Operand, Operand]:
    q = operand(query, "query", stream)
    t = operand(train, "train", stream)
    for name, d in (("query", q), ("train", t)):
        if d.dtype != "uint8":
            raise TypeError(f"{name} must be uint8 descriptors (rows of bytes), not {d.dtype}")
        if len(d.shape) != 2:
            raise ValueError(f"{name} must be 2-D (descriptors x bytes), not of shape {tuple(d.shape)}")
    if q.shape[1] != t.shape[1]:
        raise ValueError(f"query rows are {q.shape[1]} bytes, train rows {t.shape[1]}: the widths differ")
    if q.memory != t.memory or q.device != t.device or q.framework != t.framework:
        raise ValueError("query and train must be arrays of one framework on one device")
    return q, t


def _on_device(q: Operand, t: Operand, k: int, backend: str):
    """(dist, idx) of the search of q against t in their device memory, queued on q's stream (new
    int32 arrays of their framework); None when backend "auto" finds that the GPU does not run it."""
    idx, dist = empty(q, (q.shape[0], k), "int32"), empty(q, (q.shape[0], k), "int32")
    try:
        _core.knn(q, t, q.shape[1], k, address_of(idx), address_of(dist), 0, backend)
    except _core.Unsupported:
        if backend != "auto":
            raise
        return None
    return dist, idx


def _on_host(q: Operand, t: Operand, k: int, backend: str, reverse: Optional[np.ndarray] = None):
    """(dist, idx) of the search of the host arrays q against t as NumPy arrays; `reverse` (int32,
    one per training row) also gets every training row's nearest query."""
    nq = q.shape[0]
    idx, dist = np.empty((nq, k), np.int32), np.empty((nq, k), np.int32)
    _core.knn(q, t, q.shape[1], k, address_of(idx), address_of(dist), 0 if reverse is None else address_of(reverse),
              backend)
    return dist, idx


def knn_hamming(query, train, k: int = 2, *, backend: str = "auto", stream=None):
    """The k nearest training descriptors of every query by Hamming distance: (dist, idx), each an
    int32 array (len(query), k) of the input's framework, nearest first in OpenCV's order
    (distance, then the lower training index); -1 where train has fewer than k rows. Descriptors
    are uint8 arrays (N, bytes), bytes a multiple of 4; k is 1..8. backend "auto" takes the GPU
    when there is one (the search is compute-bound: a host array's upload is cheap beside it)."""
    q, t = _descriptors(query, train, stream)
    k = bounded(k, "k", 1, _core.match_max_k)
    if backend not in BACKENDS:
        check_backend(backend)
    if q.memory == HOST:
        dist, idx = _on_host(q, t, k, backend)
        return like_input(dist, q), like_input(idx, q)
    if backend != "cpu":
        found = _on_device(q, t, k, backend)
        if found is not None:
            return finish(found[0], q), finish(found[1], q)
    dist, idx = _on_host(host_copy(q), host_copy(t), k, "cpu")
    return like_input(dist, q), like_input(idx, q)


def match(query, train, *, ratio: Optional[float] = None, margin: Optional[int] = None,
          max_distance: Optional[int] = None, cross_check: bool = False, backend: str = "auto", stream=None):
    """The matches of a brute-force Hamming matcher: an int32 array (M, 3) of (query index, train
    index, distance) rows in query order, of the input's framework. Rules (all that are given
    must hold): ratio -- nearest < ratio * second nearest (Lowe's test, 0 < ratio <= 1); margin --
    second nearest - nearest > margin (the paper's rule); max_distance -- nearest <= max_distance;
    cross_check -- the query is its nearest training descriptor's nearest query. With no rule,
    every query's nearest neighbour. The same matches as OpenCV's BFMatcher with NORM_HAMMING."""
    q, t = _descriptors(query, train, stream)
    r = 0.0 if ratio is None else real(ratio, "ratio")  # 0: no ratio test
    if ratio is not None and not (0 < r <= 1):
        raise ValueError(f"ratio must be in (0, 1], got {ratio}")
    if margin is not None and integer_below_zero(margin, "margin"):
        raise ValueError(f"margin must not be negative, got {margin}")
    if max_distance is not None and integer_below_zero(max_distance, "max_distance"):
        raise ValueError(f"max_distance must not be negative, got {max_distance}")
    m = -1 if margin is None else bounded(margin, "margin", 0, INT32_MAX)
    d = -1 if max_distance is None else bounded(max_distance, "max_distance", 0, INT32_MAX)
    cross = flag(cross_check, "cross_check")
    k = 2 if (ratio is not None or margin is not None) else 1
    _core.check_match_rule(r, m, d, cross)
    if backend not in BACKENDS:
        check_backend(backend)
    nq, nt = q.shape[0], t.shape[0]
    reverse_needed = cross and nq > 0 and nt > 0  # (an empty set keeps no matches: no reverse search)

    lists = None
    if q.memory != HOST and backend != "cpu":  # the searches on the GPU, their lists read back
        found = _on_device(q, t, k, backend)
        if found is not None and reverse_needed:
            nearest = _on_device(t, q, 1, backend)
            found = None if nearest is None else found
        if found is not None:
            lists = to_numpy(found[0]), to_numpy(found[1])
            reverse = to_numpy(nearest[1]).reshape(-1) if reverse_needed else None
    if lists is None:
        hq, ht = (q, t) if q.memory == HOST else (host_copy(q), host_copy(t))
        where = backend if q.memory == HOST else "cpu"
        reverse = np.empty(nt, np.int32) if reverse_needed else None
        lists = _on_host(hq, ht, k, where, reverse)
    dist, idx = lists
    rows = np.empty((nq, 3), np.int32)
    kept = _core.accept(address_of(idx), address_of(dist), nq, k, r, m, d, cross,
                        0 if reverse is None else address_of(reverse), address_of(rows))
    return like_input(np.ascontiguousarray(rows[:kept]), q)
