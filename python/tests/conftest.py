"""Shared fixtures: a logged random seed, and the GPU frameworks present on this machine."""

import os
import zlib

import numpy as np
import pytest

import multireduce as mr


@pytest.fixture
def rng(request):
    """A generator seeded from MULTIREDUCE_SEED (default 20261124) and the test's name, printed so a
    failure can be replayed."""
    base = int(os.environ.get("MULTIREDUCE_SEED", "20261124"))
    seed = base ^ zlib.crc32(request.node.nodeid.encode())
    print(f"seed {seed} (MULTIREDUCE_SEED={base})")
    return np.random.default_rng(seed)


def _gpu_frameworks():
    """(name, to_device, to_numpy) for each framework with a usable GPU here."""
    found = []
    if not mr.cuda_available():
        return found
    try:
        import cupy

        found.append(("cupy", cupy.asarray, cupy.asnumpy))
    except Exception:  # noqa: BLE001 -- absent or without a GPU
        pass
    try:
        import torch

        if torch.cuda.is_available():
            found.append(("torch", lambda a: torch.from_numpy(np.ascontiguousarray(a)).cuda(), lambda t: t.cpu().numpy()))
    except Exception:  # noqa: BLE001
        pass
    return found


GPU_FRAMEWORKS = _gpu_frameworks()
gpu = pytest.mark.skipif(not GPU_FRAMEWORKS, reason="no GPU (or no CuPy/PyTorch with CUDA) on this machine")


def gpu_params():
    """Parameters over the GPU frameworks; one skipped parameter when there is none."""
    if not GPU_FRAMEWORKS:
        return [pytest.param(None, marks=pytest.mark.skip(reason="no GPU (or no CuPy/PyTorch with CUDA) here"))]
    return [pytest.param(f, id=f[0]) for f in GPU_FRAMEWORKS]
