"""python -m multireduce.bench: the CPU rows run and write their record; without a GPU (or without
PyTorch and CuPy) the GPU rows are a message and exit status 1, not a traceback."""

import json
import pathlib
import subprocess
import sys

import pytest

import multireduce as mr

ROOT = pathlib.Path(__file__).resolve().parents[2]


def bench(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "multireduce.bench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_cpu_rows_run_and_write_their_record(tmp_path):
    out = tmp_path / "cpu.json"
    done = bench("--cpu", "--quick", "--json", str(out))
    assert done.returncode == 0, done.stderr
    record = json.loads(out.read_text())
    assert record["machine"] == "cpu" and record["multireduce"] == mr.__version__
    sums = [r for r in record["rows"] if r["case"].startswith("sum of 2^20 float32")]
    assert len(sums) == 1 and sums[0]["peer_us"] > 0 and sums[0]["multireduce_us"] > 0
    assert "sum of 2^20 float32" in done.stdout


def test_gpu_rows_without_a_gpu_are_a_message():
    if mr.cuda_available():
        pytest.skip("this machine has a GPU")
    done = bench("--quick")
    assert done.returncode == 1
    assert "peers: needs" in done.stderr and "Traceback" not in done.stderr
