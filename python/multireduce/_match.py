"""The Hamming matcher of binary descriptors: knn_hamming, match and match_all (see the package's doc and
docs/match.md). One path, as the reductions' (_api): the descriptor sets imported as Operands, one
_core.knn call per search. Host arrays take backend "auto" as the runtime chooses (the GPU when it
runs the search: it is compute-bound, so a host array's upload is cheap beside it); device arrays
run on their GPU, or on host copies for "cpu" and, for "auto", when the GPU does not run the search.
"""

from __future__ import annotations

from typing import Any, NamedTuple, Optional, Tuple

import numpy as np

from . import _core
from ._backends import HOST_BACKEND
from ._arrays import framework_of, operand, order_before, settle
from ._calls import BACKENDS, INT32_MAX, bounded, check_backend, devices_of, flag, integer, real
from ._records import HOST, Operand
from ._results import address_of, empty, finish, host_copy, like_input, to_numpy


def integer_below_zero(value, name: str) -> bool:
    """Whether an integer argument is negative (TypeError for what is not an integer)."""
    return integer(value, name) < 0


def _descriptors(query, train, stream) -> Tuple[Operand, Operand]:
    q = operand(query, "query", stream)
    t = operand(train, "train", stream)
    order_before(t, q)
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


def _rule(ratio, margin, max_distance, cross_check):
    """The rule as the core takes it, checked: (ratio (0: none), margin (-1: none), max_distance
    (-1: none), cross_check, k: 2 where a test looks at the second nearest, else 1)."""
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
    _core.check_match_rule(r, m, d, cross)
    return r, m, d, cross, 2 if (ratio is not None or margin is not None) else 1


def _on_device(q: Operand, t: Operand, k: int, backend: str, devices=()):
    """(dist, idx) of the search of q against t in their device memory, queued on q's stream (new
    int32 arrays of their framework); None when backend "auto" finds that the GPU does not run it."""
    idx, dist = empty(q, (q.shape[0], k), "int32"), empty(q, (q.shape[0], k), "int32")
    try:
        _core.knn(q, t, q.shape[1], k, address_of(idx), address_of(dist), 0, backend, devices)
    except _core.Unsupported:
        if backend != "auto" or devices:
            raise
        return None
    settle(q)
    return dist, idx


def _on_host(q: Operand, t: Operand, k: int, backend: str, reverse: Optional[np.ndarray] = None, devices=()):
    """(dist, idx) of the search of the host arrays q against t as NumPy arrays; `reverse` (int32,
    one per training row) also gets every training row's nearest query."""
    nq = q.shape[0]
    idx, dist = np.empty((nq, k), np.int32), np.empty((nq, k), np.int32)
    _core.knn(q, t, q.shape[1], k, address_of(idx), address_of(dist), 0 if reverse is None else address_of(reverse),
              backend, devices)
    return dist, idx


def knn_hamming(query, train, k: int = 2, *, backend: str = "auto", stream=None, devices=None):
    """The k nearest training descriptors of every query by Hamming distance: (dist, idx), each an
    int32 array (len(query), k) of the input's framework, nearest first in OpenCV's order
    (distance, then the lower training index); -1 where train has fewer than k rows. Descriptors
    are uint8 arrays (N, bytes), bytes a multiple of 4; k is 1..8. backend "auto" takes the GPU
    when there is one (the search is compute-bound: a host array's upload is cheap beside it).
    devices: several GPUs ("all" or a list) for host arrays: the training set in shards, one per
    GPU, the lists merged exactly (the same answer as one GPU's)."""
    q, t = _descriptors(query, train, stream)
    k = bounded(k, "k", 1, _core.match_max_k)
    if backend not in BACKENDS:
        check_backend(backend)
    ordinals, backend = devices_of(devices, backend)
    if q.memory == HOST:
        dist, idx = _on_host(q, t, k, backend, devices=ordinals)
        return like_input(dist, q), like_input(idx, q)
    if backend != HOST_BACKEND:
        found = _on_device(q, t, k, backend, ordinals)
        if found is not None:
            return finish(found[0], q), finish(found[1], q)
    dist, idx = _on_host(host_copy(q), host_copy(t), k, HOST_BACKEND)
    return like_input(dist, q), like_input(idx, q)


def match(query, train, *, ratio: Optional[float] = None, margin: Optional[int] = None,
          max_distance: Optional[int] = None, cross_check: bool = False, backend: str = "auto", stream=None,
          devices=None):
    """The matches of a brute-force Hamming matcher: an int32 array (M, 3) of (query index, train
    index, distance) rows in query order, of the input's framework. Rules (all that are given
    must hold): ratio -- nearest < ratio * second nearest (Lowe's test, 0 < ratio <= 1); margin --
    second nearest - nearest > margin (the paper's rule); max_distance -- nearest <= max_distance;
    cross_check -- the query is its nearest training descriptor's nearest query. With no rule,
    every query's nearest neighbour. The same matches as OpenCV's BFMatcher with NORM_HAMMING.
    devices: several GPUs for host arrays (as knn_hamming's)."""
    q, t = _descriptors(query, train, stream)
    r, m, d, cross, k = _rule(ratio, margin, max_distance, cross_check)
    if backend not in BACKENDS:
        check_backend(backend)
    ordinals, backend = devices_of(devices, backend)
    nq, nt = q.shape[0], t.shape[0]
    reverse_needed = cross and nq > 0 and nt > 0  # (an empty set keeps no matches: no reverse search)

    lists = None
    if q.memory != HOST and backend != HOST_BACKEND:  # the searches on the GPU, their lists read back
        found = _on_device(q, t, k, backend, ordinals)
        if found is not None and reverse_needed:
            nearest = _on_device(t, q, 1, backend, ordinals)
            found = None if nearest is None else found
        if found is not None:
            lists = to_numpy(found[0]), to_numpy(found[1])
            reverse = to_numpy(nearest[1]).reshape(-1) if reverse_needed else None
    if lists is None:
        hq, ht = (q, t) if q.memory == HOST else (host_copy(q), host_copy(t))
        where = backend if q.memory == HOST else HOST_BACKEND
        reverse = np.empty(nt, np.int32) if reverse_needed else None
        lists = _on_host(hq, ht, k, where, reverse, ordinals if q.memory == HOST else ())
    dist, idx = lists
    rows = np.empty((nq, 3), np.int32)
    kept = _core.accept(address_of(idx), address_of(dist), nq, k, r, m, d, cross,
                        0 if reverse is None else address_of(reverse), address_of(rows))
    return like_input(np.ascontiguousarray(rows[:kept]), q)


class MatchAllResult(NamedTuple):
    """What match_all found, in the inputs' framework: `pairs` (P, 2) int32 image indices (i < j)
    in the order they were matched, `offsets` (P + 1,) int64, and `matches` (M, 3) int32 rows of
    (index in image i, index in image j, distance), pair p's at offsets[p]:offsets[p + 1], each pair
    in match()'s order."""

    pairs: Any
    offsets: Any
    matches: Any

    def pair(self, i: int, j: int):
        """The matches of images i and j, (index in i, index in j, distance) rows (with i > j the
        first two columns are swapped so that the first is image i's); KeyError if the pair was
        not matched."""
        a, b = (i, j) if i < j else (j, i)
        pairs = np.asarray(to_numpy(self.pairs) if not isinstance(self.pairs, np.ndarray) else self.pairs)
        found = np.nonzero((pairs[:, 0] == a) & (pairs[:, 1] == b))[0]
        if found.size == 0:
            raise KeyError(f"the pair ({i}, {j}) was not matched")
        offsets = self.offsets if isinstance(self.offsets, np.ndarray) else to_numpy(self.offsets)
        rows = self.matches[int(offsets[found[0]]):int(offsets[found[0] + 1])]
        return rows if i < j else rows[:, [1, 0, 2]]


def _pair_list(pairs, sequential, images: int) -> np.ndarray:
    """The pairs to match as a (P, 2) int32 array, i < j: every pair, each image with the next
    `sequential`, or the given ones (ordered, repeats dropped at their first place)."""
    if pairs is not None and sequential is not None:
        raise ValueError("give pairs or sequential, not both")
    if sequential is not None:
        w = bounded(sequential, "sequential", 1, INT32_MAX)
        i, j = np.triu_indices(images, 1)
        keep = j - i <= w
        return np.ascontiguousarray(np.stack([i[keep], j[keep]], axis=1).astype(np.int32))
    if pairs is None:
        i, j = np.triu_indices(images, 1)
        return np.ascontiguousarray(np.stack([i, j], axis=1).astype(np.int32))
    p = np.asarray(to_numpy(pairs) if framework_of(pairs) in ("cupy", "torch", "jax") else pairs)
    if p.size == 0:
        return np.empty((0, 2), np.int32)
    if p.dtype.kind not in "iu":
        raise TypeError(f"pairs must be integers, not {p.dtype}")
    if p.ndim != 2 or p.shape[1] != 2:
        raise ValueError(f"pairs must be of shape (P, 2), not {p.shape}")
    if (p < 0).any() or (p >= images).any():
        bad = p[((p < 0) | (p >= images)).any(axis=1)][0]
        raise ValueError(f"pair {tuple(int(v) for v in bad)} names an image outside the {images} given")
    if (p[:, 0] == p[:, 1]).any():
        bad = p[p[:, 0] == p[:, 1]][0]
        raise ValueError(f"pair {tuple(int(v) for v in bad)} is an image with itself")
    ordered = np.sort(p, axis=1).astype(np.int32)
    _, first = np.unique(ordered, axis=0, return_index=True)
    return np.ascontiguousarray(ordered[np.sort(first)])


def _concatenated(images) -> Any:
    """The images' rows as one array of their framework (NumPy on the host)."""
    first = images[0]
    if first.memory == HOST:
        return np.concatenate([np.asarray(o.obj).reshape(o.shape) for o in images])
    if first.framework == "cupy":
        import cupy
        return cupy.concatenate([o.obj.reshape(o.shape) for o in images])
    if first.framework == "torch":
        import torch
        return torch.cat([o.obj.reshape(o.shape) for o in images])
    return np.concatenate([to_numpy(o.obj).reshape(o.shape) for o in images])


def match_all(descriptors, *, pairs=None, sequential: Optional[int] = None, ratio: Optional[float] = None,
              margin: Optional[int] = None, max_distance: Optional[int] = None, cross_check: bool = False,
              backend: str = "auto", stream=None, devices=None) -> MatchAllResult:
    """Matches the images of a collection pair by pair: `descriptors` is a list of uint8 arrays
    (N_i, bytes) of one framework (NumPy, CuPy, PyTorch), one per image. The pairs: every pair
    i < j (default), each image with the next `sequential`, or `pairs` ((P, 2) image indices; a pair
    is ordered i < j, a repeated one matched once, an image with itself is a ValueError). Pair
    (i, j) is matched exactly as match(descriptors[i], descriptors[j], ...) with the same rules.
    Returns a MatchAllResult (pairs, offsets, matches, and .pair(i, j)) in the inputs' framework.
    On the GPU the pairs go in rounds of many pairs, each at the large-search rate. devices: several
    GPUs ("all" or a list) for host descriptors: the GPUs take the pairs a unit at a time as they
    finish (work stealing); the result is the one GPU's, byte for byte."""
    if isinstance(descriptors, (str, bytes)) or not hasattr(descriptors, "__len__"):
        raise TypeError("descriptors must be a list of arrays, one per image")
    if len(descriptors) == 0:
        raise ValueError("descriptors is empty: a collection needs at least one image")
    images = [operand(x, f"descriptors[{n}]", stream) for n, x in enumerate(descriptors)]
    for n, d in enumerate(images):
        if d.dtype != "uint8":
            raise TypeError(f"descriptors[{n}] must be uint8 descriptors (rows of bytes), not {d.dtype}")
        if len(d.shape) != 2:
            raise ValueError(f"descriptors[{n}] must be 2-D (descriptors x bytes), not of shape {tuple(d.shape)}")
        if d.shape[1] != images[0].shape[1]:
            raise ValueError(f"descriptors[{n}] rows are {d.shape[1]} bytes, descriptors[0]'s {images[0].shape[1]}: "
                             "the widths differ")
        if (d.memory, d.device, d.framework) != (images[0].memory, images[0].device, images[0].framework):
            raise ValueError("the descriptors must be arrays of one framework on one device")
    r, m, d, cross, k = _rule(ratio, margin, max_distance, cross_check)
    if backend not in BACKENDS:
        check_backend(backend)
    ordinals, backend = devices_of(devices, backend)
    pair_rows = _pair_list(pairs, sequential, len(images))
    offsets = np.zeros(len(images) + 1, np.int64)
    offsets[1:] = np.cumsum([o.shape[0] for o in images])
    width = images[0].shape[1]
    rows = operand(_concatenated(images), "descriptors", stream)

    def run(rows_operand, where):
        return _core.match_all(rows_operand, address_of(offsets), len(images), address_of(pair_rows),
                               pair_rows.shape[0], width, k, r, m, d, cross, 0, where,
                               ordinals if where != HOST_BACKEND else ())

    if rows.memory != HOST and backend == HOST_BACKEND:
        found = run(host_copy(rows), HOST_BACKEND)
    else:
        try:
            found = run(rows, backend)
        except _core.Unsupported:
            if rows.memory == HOST or backend != "auto" or ordinals:
                raise
            found = run(host_copy(rows), HOST_BACKEND)
    match_offsets = np.frombuffer(found[0], np.int64).copy()
    matches = np.frombuffer(found[1], np.int32).reshape(-1, 3).copy()
    like = images[0]
    return MatchAllResult(like_input(pair_rows, like), like_input(match_offsets, like), like_input(matches, like))
