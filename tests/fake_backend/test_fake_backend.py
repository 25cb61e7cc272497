"""The fake fourth backend (fake_backend.cpp) through the Python package: the package built around a
core with it registered (PYTHONPATH) names it, routes backend="fake" to it and reads its entry of the
table, with no file of the package knowing it. Run by ctest (tests/fake_backend/CMakeLists.txt)."""

import os
import subprocess

import numpy as np
import pytest

import multireduce as mr
from multireduce import _backends


def test_the_package_lists_it_last():
    assert mr.backends()[-1] == "fake"
    entry = _backends.entry("fake")
    assert entry.device_noun == "fake device"
    assert entry.memory == _backends.HOST
    assert not entry.automatic_for_host_data


def test_a_named_reduce_runs_on_it():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    assert mr.reduce(x, backend="fake") == 1010.0  # the fake's mark: 1000 + the sum
    assert mr.reduce(x.astype(np.float32), backend="fake") == np.float32(1010.0)
    assert mr.reduce(x) == 10.0  # "auto" does not choose it (it runs host data only when named)


def test_what_it_refuses_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="backend='fake': the fake backend sums whole arrays only"):
        mr.reduce(np.ones(4), "max", backend="fake")
    with pytest.raises(TypeError, match="backend='fake': the fake backend sums float64 and float32 only"):
        mr.reduce(np.ones(4, dtype=np.int32), backend="fake")


CLI = os.environ.get("MULTIREDUCE_FAKE_BACKEND_CLI")


@pytest.mark.skipif(not CLI, reason="MULTIREDUCE_FAKE_BACKEND_CLI (the tool built with the fake backend) is not set")
def test_the_tool_runs_it_too(tmp_path):
    x = tmp_path / "x.npy"
    np.save(x, np.array([1.0, 2.0, 3.0, 4.0]))
    run = subprocess.run([CLI, "reduce", str(x), "--op", "sum", "--backend", "fake", "--device", "0", "--timing"],
                         capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "1010"
    assert "backend fake (fake device 0)" in run.stderr
