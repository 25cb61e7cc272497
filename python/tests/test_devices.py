"""devices=: the jobs that split over several GPUs give the one GPU's answers (bit for bit, element
for element), and a bad device list is an error before anything runs. [0, 0] runs two workers on
one GPU, so a machine with one GPU tests the splitting; "all" takes every GPU there is."""
import numpy as np
import pytest

import multireduce as mr
from multireduce import _core

GPUS = _core.device_count("cuda")
needs_gpu = pytest.mark.skipif(GPUS == 0, reason="no CUDA GPU on this machine")
SETS = [[0, 0], "all", list(range(GPUS)) * 2] if GPUS else []


def statistics_bytes(s):
    return b"".join(np.asarray(v).tobytes() for v in s)


@pytest.mark.parametrize("devices, error", [([], ValueError), ("first", ValueError), ([-1], ValueError),
                                            ([0.5], TypeError), (3, TypeError)])
def test_bad_device_lists_are_errors(devices, error):
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(error):
        mr.statistics(x, devices=devices)
    with pytest.raises(error):
        mr.reduce(x, "sum", devices=devices)


@pytest.mark.parametrize("ordinal", [2**31, 2**40])
def test_a_device_number_past_int32_is_a_value_error(ordinal):
    x = np.arange(10, dtype=np.float32)
    q = np.zeros((3, 32), np.uint8)
    for call in (lambda: mr.statistics(x, devices=[ordinal]), lambda: mr.reduce(x, "sum", devices=[0, ordinal]),
                 lambda: mr.knn_hamming(q, q, devices=[ordinal]), lambda: mr.match(q, q, devices=[ordinal])):
        with pytest.raises(ValueError, match=rf"devices must be GPU numbers from 0 to 2\*\*31 - 1, .*{ordinal}"):
            call()


def test_devices_name_gpus_not_the_cpu():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="devices"):
        mr.statistics(x, backend="cpu", devices=[0])


@pytest.mark.skipif(GPUS > 0, reason="the machine has a GPU")
def test_without_a_gpu_devices_are_refused():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match="no CUDA device"):
        mr.statistics(x, devices="all")
    with pytest.raises(ValueError):  # UnsupportedJob: the GPU backend has no device 0 here
        mr.statistics(x, devices=[0])


@needs_gpu
def test_a_missing_gpu_is_refused():
    x = np.arange(10, dtype=np.float32)
    with pytest.raises(ValueError, match=str(GPUS + 7)):
        mr.statistics(x, devices=[0, GPUS + 7])


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint8"])
def test_whole_jobs_are_the_one_gpus(rng, dtype):
    # Over 256 MiB for float32: several pieces, so every worker of the set has some.
    n = (1 << 26) + 12345 if dtype == "float32" else (1 << 22) + 7
    x = (rng.standard_normal(n) * 100).astype(dtype)
    one = statistics_bytes(mr.statistics(x, backend="cuda"))
    for devices in SETS:
        assert statistics_bytes(mr.statistics(x, devices=devices)) == one
        for op in ("sum", "min", "max", "argmin", "argmax"):
            assert np.asarray(mr.reduce(x, op, devices=devices)).tobytes() == \
                np.asarray(mr.reduce(x, op, backend="cuda")).tobytes(), (op, devices)


@needs_gpu
def test_other_shapes_fall_back_or_say_why(rng):
    x = rng.standard_normal(1000).astype(np.float32)
    with pytest.raises(ValueError, match="several GPUs"):
        mr.reduce(x.reshape(10, 100), "sum", axis=1, backend="cuda", devices=[0, 0])


@needs_gpu
def test_sharded_search_and_matches_are_the_one_gpus(rng):
    q = rng.integers(0, 256, (700, 32), dtype=np.uint8)
    t = rng.integers(0, 256, (3001, 32), dtype=np.uint8)
    t[2000:2100] = t[100:200]  # ties across the shards: the lower training index wins
    dist, idx = mr.knn_hamming(q, t, 3, backend="cuda")
    want = mr.match(q, t, ratio=0.9, cross_check=True, backend="cuda")
    for devices in SETS:
        d, i = mr.knn_hamming(q, t, 3, devices=devices)
        np.testing.assert_array_equal(i, idx)
        np.testing.assert_array_equal(d, dist)
        np.testing.assert_array_equal(mr.match(q, t, ratio=0.9, cross_check=True, devices=devices), want)


@needs_gpu
def test_match_all_is_the_one_gpus_byte_for_byte(rng):
    images = [rng.integers(0, 256, (int(n), 32), dtype=np.uint8) for n in rng.integers(0, 500, 17)]
    one = mr.match_all(images, ratio=0.8, backend="cuda")
    for devices in SETS:
        several = mr.match_all(images, ratio=0.8, devices=devices)
        assert several.pairs.tobytes() == one.pairs.tobytes()
        assert several.offsets.tobytes() == one.offsets.tobytes()
        assert several.matches.tobytes() == one.matches.tobytes()


@needs_gpu
def test_device_arrays_stay_on_their_gpu():
    cp = pytest.importorskip("cupy")
    x = cp.arange(1000, dtype=cp.float32)
    with pytest.raises(ValueError, match="GPU memory"):
        mr.statistics(x, devices=[0, 0])


@needs_gpu
def test_example_several_gpus_runs():
    import os
    import subprocess
    import sys
    example = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "several_gpus.py")
    done = subprocess.run([sys.executable, example], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "the same matches" in done.stdout and "bit for bit" in done.stdout
