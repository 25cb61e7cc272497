"""mr.match_all, the collection matcher, on NumPy arrays (the CPU, and the GPU where there is one
through backend "auto"): every pair equal to the NumPy reference's match of that pair, across
images of 0, 1 and 2 descriptors, 256 and 512 bits, every pair / a pair list / sequential, every
rule; and the errors. Device arrays: test_gpu.py."""

import numpy as np
import pytest

import multireduce as mr
import reference as ref

RULES = (dict(), dict(ratio=0.8), dict(margin=2), dict(max_distance=100), dict(ratio=0.9, cross_check=True),
         dict(cross_check=True))


def collection(rng, sizes, width, sparse=False):
    out = []
    for n in sizes:
        d = rng.integers(0, 256, (n, width), dtype=np.uint8)
        if sparse:  # mostly zero bits: many equal distances (ties)
            d &= rng.integers(0, 256, (n, width), dtype=np.uint8) & rng.integers(0, 256, (n, width), dtype=np.uint8)
        out.append(d)
    return out


def expect_reference(images, result, pairs, **rule):
    np.testing.assert_array_equal(result.pairs, np.asarray(pairs, np.int32).reshape(-1, 2))
    assert result.offsets.dtype == np.int64 and result.matches.dtype == np.int32
    assert result.offsets.shape == (len(pairs) + 1,) and result.offsets[0] == 0
    assert result.offsets[-1] == len(result.matches)
    for p, (i, j) in enumerate(pairs):
        want = ref.match(images[i], images[j], **rule)
        np.testing.assert_array_equal(result.matches[result.offsets[p]:result.offsets[p + 1]], want,
                                      err_msg=f"pair ({i}, {j}), rule {rule}")
        np.testing.assert_array_equal(result.pair(i, j), want)
        np.testing.assert_array_equal(result.pair(j, i), want[:, [1, 0, 2]])


@pytest.mark.parametrize("backend", ("auto", "cpu"))
@pytest.mark.parametrize("width", (32, 64))
@pytest.mark.parametrize("rule", RULES)
def test_every_pair_is_match_of_that_pair(rng, backend, width, rule):
    images = collection(rng, (40, 0, 1, 2, 70, 33), width, sparse=width == 64)
    pairs = [(i, j) for i in range(6) for j in range(i + 1, 6)]
    expect_reference(images, mr.match_all(images, backend=backend, **rule), pairs, **rule)


def test_pair_lists_and_sequential(rng):
    images = collection(rng, (30, 45, 12, 60, 5), 32)
    expect_reference(images, mr.match_all(images, sequential=2, ratio=0.8),
                     [(0, 1), (0, 2), (1, 2), (1, 3), (2, 3), (2, 4), (3, 4)], ratio=0.8)
    # A given list: each pair ordered i < j, a repeated pair (either order) matched once, in place.
    got = mr.match_all(images, pairs=[(3, 1), (0, 4), (1, 3), (2, 0)], ratio=0.8)
    expect_reference(images, got, [(1, 3), (0, 4), (0, 2)], ratio=0.8)
    expect_reference(images, mr.match_all(images, pairs=np.array([[4, 2]], np.int64)), [(2, 4)])
    empty = mr.match_all(images, pairs=np.empty((0, 2), np.int32))
    assert empty.pairs.shape == (0, 2) and empty.offsets.tolist() == [0] and empty.matches.shape == (0, 3)
    one = mr.match_all(images[:1])
    assert one.pairs.shape == (0, 2) and one.matches.shape == (0, 3)
    with pytest.raises(KeyError):
        got.pair(0, 1)


def test_inputs_are_not_modified(rng):
    images = collection(rng, (20, 30), 32)
    copies = [d.copy() for d in images]
    mr.match_all(images, ratio=0.8, cross_check=True)
    for d, c in zip(images, copies):
        np.testing.assert_array_equal(d, c)


def test_bad_input(rng):
    images = collection(rng, (10, 12, 14), 32)
    with pytest.raises(ValueError, match="empty"):
        mr.match_all([])
    with pytest.raises(TypeError, match="list of arrays"):
        mr.match_all(images[0].tobytes())
    with pytest.raises(TypeError, match="uint8"):
        mr.match_all([images[0], images[1].astype(np.int16)])
    with pytest.raises(ValueError, match="widths differ"):
        mr.match_all([images[0], rng.integers(0, 256, (5, 64), dtype=np.uint8)])
    with pytest.raises(ValueError, match="2-D"):
        mr.match_all([images[0], images[1].reshape(-1)])
    with pytest.raises(ValueError, match="itself"):
        mr.match_all(images, pairs=[(1, 1)])
    with pytest.raises(ValueError, match="outside"):
        mr.match_all(images, pairs=[(0, 3)])
    with pytest.raises(ValueError, match=r"\(P, 2\)"):
        mr.match_all(images, pairs=[0, 1, 2])
    with pytest.raises(TypeError, match="integers"):
        mr.match_all(images, pairs=[(0.0, 1.0)])
    with pytest.raises(ValueError, match="not both"):
        mr.match_all(images, pairs=[(0, 1)], sequential=1)
    with pytest.raises(ValueError, match="sequential"):
        mr.match_all(images, sequential=0)
    with pytest.raises(ValueError, match="ratio"):
        mr.match_all(images, ratio=1.5)
    with pytest.raises(ValueError, match="margin"):
        mr.match_all(images, margin=-1)
    with pytest.raises(ValueError, match="backend"):
        mr.match_all(images, backend="gpu")
