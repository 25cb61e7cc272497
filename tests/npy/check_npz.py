"""numpy.load reads what npy::encode_npz writes: runs WRITER (tests/npy/write_npz.cpp) to write
tests/npy/sample_npz.hpp's arrays to OUT, then checks every array's name, dtype, shape and value
against the same formulas, and that the archive holds exactly those members, stored.

Usage: python check_npz.py WRITER OUT.npz   (ctest npz_numpy_load; skipped without NumPy)
"""
import subprocess
import sys
import zipfile

try:
    import numpy as np
except ImportError:
    print(f"npz_numpy_load: SKIPPED (no numpy in {sys.executable})")
    sys.exit(0)

writer, out = sys.argv[1], sys.argv[2]
subprocess.run([writer, out], check=True)

expected = {
    "names": np.array(["view_0", "Ansicht_ä", "视图_2", "emoji_😀"]),
    "pairs": np.array([(i, j) for i in range(4) for j in range(i + 1, 4)], dtype=np.int32),
    "offsets": np.cumsum([0, 3, 0, 2, 1, 0, 4]).astype(np.int64),
    "matches": np.array([(r * 7 % 13, r * 5 % 11, 3 * r - 5) for r in range(10)], dtype=np.int32),
    "empty_matches": np.zeros((0, 3), dtype=np.int32),
    "xy": np.array([[r + c / 4 - 1.5 for c in range(2)] for r in range(3)], dtype=np.float32),
    "bits_ä": (np.arange(64) * 37 % 256).astype(np.uint8).reshape(2, 32),
}
assert expected["names"].dtype == np.dtype("<U9"), expected["names"].dtype

with zipfile.ZipFile(out) as archive:
    assert archive.testzip() is None, "a member's CRC is wrong"
    infos = archive.infolist()
    assert [i.filename for i in infos] == [f"{name}.npy" for name in expected], [i.filename for i in infos]
    assert all(i.compress_type == zipfile.ZIP_STORED for i in infos)
    assert infos[-1].flag_bits & 0x800, "a non-ASCII name without the UTF-8 flag"

with np.load(out) as npz:  # allow_pickle=False: strings must not need pickle
    assert list(npz.files) == list(expected), npz.files
    for name, want in expected.items():
        got = npz[name]
        assert got.dtype == want.dtype, (name, got.dtype, want.dtype)
        assert got.shape == want.shape, (name, got.shape, want.shape)
        assert np.array_equal(got, want), (name, got, want)
print(f"npz_numpy_load: numpy {np.__version__} read all {len(expected)} arrays of {out}")
