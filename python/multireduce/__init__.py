"""multireduce: fast GPU reductions -- one huge reduction, many at once, segmented, sliding
windows, all statistics in one pass, and a brute-force Hamming matcher for binary descriptors --
on NumPy arrays (on the CPU) and, zero-copy, on CuPy, PyTorch and JAX arrays on the GPU and on
PyOpenCL arrays on their OpenCL device (on their queue: docs/opencl.md).

    >>> import numpy as np, multireduce as mr
    >>> x = np.arange(10, dtype=np.float32)
    >>> float(mr.reduce(x, "sum")), mr.window_reduce(x, 3, "max").tolist()
    (45.0, [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0])

Functions: reduce, segmented_reduce, window_reduce, statistics, knn_hamming, match, match_all,
extract (images in: OpenCV's ORB or BRISK through cv2), trace,
cuda_available, backends (the names backend= takes). Errors: TypeError (dtypes, frameworks),
ValueError (shapes, arguments), MemoryError (out of GPU memory), multireduce.CudaError (any other
CUDA failure, a RuntimeError), multireduce.Unsupported (a RuntimeError: the backend named does not
run the job; the message starts "backend='NAME': ") as multireduce.UnsupportedDtype (also a
TypeError: because of the element type) or multireduce.UnsupportedJob (also a ValueError: for
another reason). multireduce.colmap writes match_all's matches for COLMAP (docs/colmap.md).
See docs/python.md.
"""

from ._api import (
    CudaError,
    Statistics,
    backends,
    cuda_available,
    reduce,
    segmented_reduce,
    statistics,
    trace,
    window_reduce,
)
from ._match import MatchAllResult, knn_hamming, match, match_all
from ._extract import ImageFeatures, extract
from . import colmap
from ._core import Unsupported, UnsupportedDtype, UnsupportedJob, __version__

for _error in (CudaError, Unsupported, UnsupportedDtype, UnsupportedJob):
    _error.__module__ = __name__  # shown as multireduce.UnsupportedJob, where users catch it
del _error

__all__ = [
    "CudaError",
    "Statistics",
    "backends",
    "colmap",
    "cuda_available",
    "extract",
    "ImageFeatures",
    "knn_hamming",
    "match",
    "match_all",
    "MatchAllResult",
    "reduce",
    "segmented_reduce",
    "statistics",
    "trace",
    "Unsupported",
    "UnsupportedDtype",
    "UnsupportedJob",
    "window_reduce",
    "__version__",
]
