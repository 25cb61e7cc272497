"""Images in: mr.extract against OpenCV called directly on the repository's images (every keypoint
and descriptor), the folder it writes as match-all reads it, images -> matches -> COLMAP's
geometric verification, and the tool's `multireduce extract` (MULTIREDUCE_CLI) the same way:
what it writes, the three commands docs/colmap.md shows, and its errors."""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import multireduce as mr
from multireduce import colmap

IMAGES = Path(__file__).resolve().parents[2] / "tests" / "data" / "images"
NAMES = [f"view_{n}.jpg" for n in range(4)]
HOMOGRAPHIES = np.load(IMAGES.parent / "match" / "collection_homographies.npy")[:4]
CLI = os.environ.get("MULTIREDUCE_CLI")


def _opencv_directly(cv2, path, descriptor, limit):
    grey = cv2.imread(str(path), cv2.IMREAD_GRAYSCALE)
    if descriptor == "orb":
        return cv2.ORB_create(nfeatures=limit).detectAndCompute(grey, None)
    brisk = cv2.BRISK_create() if hasattr(cv2, "BRISK_create") else cv2.xfeatures2d.BRISK_create()
    found = sorted(brisk.detect(grey, None), key=lambda k: -k.response)[:limit]
    return brisk.compute(grey, found)


@pytest.mark.parametrize("descriptor, limit", [("orb", 8192), ("orb", 500), ("brisk", 8192), ("brisk", 300)])
def test_extract_is_opencv_called_directly(descriptor, limit):
    cv2 = pytest.importorskip("cv2")
    if descriptor == "brisk" and not (hasattr(cv2, "BRISK_create") or hasattr(getattr(cv2, "xfeatures2d", None),
                                                                              "BRISK_create")):
        with pytest.raises(ModuleNotFoundError, match="contrib"):
            mr.extract(IMAGES, descriptor="brisk")
        pytest.skip(f"cv2 {cv2.__version__} has no BRISK (OpenCV 5 moved it to the contrib modules)")
    got = mr.extract(IMAGES, descriptor=descriptor, max_features=limit)
    assert [f.name for f in got] == NAMES
    for f in got:
        keypoints, rows = _opencv_directly(cv2, IMAGES / f.name, descriptor, limit)
        assert f.size == (512, 512)
        assert f.keypoints.dtype == np.float32 and f.descriptors.dtype == np.uint8
        assert f.descriptors.shape == (len(keypoints), 32 if descriptor == "orb" else 64)
        assert 0 < len(keypoints) <= limit
        np.testing.assert_array_equal(f.keypoints, np.array([k.pt for k in keypoints], np.float32))
        np.testing.assert_array_equal(f.descriptors, rows)


def _agreement(names, result, keypoints):
    """The share of the kept matches that land within 3 px of where the true homographies put them."""
    index = {n: i for i, n in enumerate(NAMES)}
    good = total = 0
    for p, (a, b) in enumerate(np.asarray(result.pairs)):
        m = np.asarray(result.matches)[result.offsets[p]:result.offsets[p + 1]]
        h = HOMOGRAPHIES[index[names[b]]] @ np.linalg.inv(HOMOGRAPHIES[index[names[a]]])
        src = np.c_[keypoints[a][m[:, 0]], np.ones(len(m))] @ h.T
        dst = keypoints[b][m[:, 1]]
        good += int(np.sum(np.linalg.norm(src[:, :2] / src[:, 2:] - dst, axis=1) <= 3))
        total += len(m)
    return good / max(total, 1)


def test_images_to_matches_to_colmap(tmp_path):
    """The Python way: extract into a folder, match_all, a new COLMAP database, COLMAP's own
    geometric verification finds every pair."""
    pytest.importorskip("cv2")
    pycolmap = pytest.importorskip("pycolmap")
    features = tmp_path / "features"
    found = mr.extract(IMAGES, features, max_features=2000)
    assert sorted(os.listdir(features)) == sorted([n + ".npy" for n in NAMES] + [n + ".xy.npy" for n in NAMES])
    for f in found:  # the folder holds exactly what was returned
        np.testing.assert_array_equal(np.load(features / f"{f.name}.npy"), f.descriptors)
        np.testing.assert_array_equal(np.load(features / f"{f.name}.xy.npy"), f.keypoints)
    names = [f.name for f in found]
    result = mr.match_all([f.descriptors for f in found], ratio=0.8, cross_check=True)
    assert _agreement(names, result, [f.keypoints for f in found]) >= 0.8
    db = str(tmp_path / "db")
    colmap.write_matches(db, names, result, image_size=(512, 512), keypoints=[f.keypoints for f in found])
    pycolmap.geometric_verification(db)
    database = pycolmap.Database.open(db)
    try:
        verified = [database.read_two_view_geometry(int(a) + 1, int(b) + 1) for a, b in result.pairs]
    finally:
        database.close()
    assert all(len(g.inlier_matches) >= 30 for g in verified), [len(g.inlier_matches) for g in verified]


def test_extract_refuses_what_it_cannot_take(tmp_path):
    pytest.importorskip("cv2")
    with pytest.raises(NotADirectoryError):
        mr.extract(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no images"):
        mr.extract(tmp_path / "empty")
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(IMAGES / "view_0.jpg", bad / "a.jpg")
    (bad / "b.jpg").write_bytes(b"not a JPEG at all")
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="b.jpg: not an image"):
        mr.extract(bad, out)
    assert not out.exists()  # nothing written
    with pytest.raises(ValueError, match="descriptor"):
        mr.extract(IMAGES, descriptor="sift")
    with pytest.raises(ValueError, match="max_features"):
        mr.extract(IMAGES, max_features=0)
    stray = tmp_path / "stray"
    stray.mkdir()
    np.save(stray / "other.npy", np.zeros((2, 32), np.uint8))
    with pytest.raises(ValueError, match="other.npy: not a feature file"):
        mr.extract(IMAGES, stray)
    assert os.listdir(stray) == ["other.npy"]
    with pytest.raises(ValueError, match="same file name"):
        mr.extract([IMAGES / "view_0.jpg", tmp_path / "x" / "view_0.jpg"])


# ---- the tool ---------------------------------------------------------------------------------------

def _tool_has_opencv():
    if not CLI:
        return False
    text = subprocess.run([CLI, "--help"], capture_output=True, text=True).stdout
    probe = subprocess.run([CLI, "extract", "/nonexistent-folder", "/tmp/unused"], capture_output=True, text=True)
    return "extract" in text and "without OpenCV" not in probe.stderr


tool = pytest.mark.skipif(not _tool_has_opencv(), reason="MULTIREDUCE_CLI not set, or the tool was built without OpenCV")


@tool
def test_the_three_commands(tmp_path):
    """docs/colmap.md's images -> COLMAP: `multireduce extract`, `multireduce match-all --colmap-db`,
    COLMAP's geometric verification (pycolmap's, as `colmap geometric_verifier`)."""
    pycolmap = pytest.importorskip("pycolmap")
    features, db = tmp_path / "features", tmp_path / "database.db"
    run = subprocess.run([CLI, "extract", str(IMAGES), str(features), "--max-features", "2000"], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr
    assert "every image is 512 x 512" in run.stderr
    keypoints = []
    for n in NAMES:
        d, xy = np.load(features / f"{n}.npy"), np.load(features / f"{n}.xy.npy")
        assert d.dtype == np.uint8 and d.shape[1] == 32 and 0 < len(d) <= 2000
        assert xy.dtype == np.float32 and xy.shape == (len(d), 2)
        assert np.all((xy >= 0) & (xy < 512))
        keypoints.append(xy)
    subprocess.run([CLI, "match-all", str(features), "--ratio", "0.8", "--cross-check", "--colmap-db", str(db),
                    "--image-size", "512", "512", "-o", str(tmp_path / "m.npz")], check=True, capture_output=True)
    with np.load(tmp_path / "m.npz") as m:
        names = [str(n) for n in m["names"]]
        result = type("R", (), {k: m[k] for k in ("pairs", "offsets", "matches")})
    assert names == NAMES
    assert _agreement(names, result, keypoints) >= 0.8
    pycolmap.geometric_verification(str(db))
    database = pycolmap.Database.open(str(db))
    try:
        assert all(len(database.read_two_view_geometry(int(a) + 1, int(b) + 1).inlier_matches) >= 30
                   for a, b in result.pairs)
    finally:
        database.close()


@tool
def test_the_tool_and_python_agree_where_their_opencv_is_one(tmp_path):
    """The tool's OpenCV is the system's, Python's its cv2: each is compared with OpenCV called
    directly (the tool's in tests/features), and their files are equal where the versions are."""
    cv2 = pytest.importorskip("cv2")
    r = subprocess.run([CLI, "extract", str(IMAGES), str(tmp_path / "tool")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    version = r.stderr.split("OpenCV ")[1].split(")")[0]
    if version != cv2.__version__:
        pytest.skip(f"the tool has OpenCV {version}, Python's cv2 is {cv2.__version__}")
    mr.extract(IMAGES, tmp_path / "python")
    for n in NAMES:
        for suffix in (".npy", ".xy.npy"):
            np.testing.assert_array_equal(np.load(tmp_path / "tool" / f"{n}{suffix}"),
                                          np.load(tmp_path / "python" / f"{n}{suffix}"))


@tool
def test_the_tool_refuses_what_it_cannot_take(tmp_path):
    def tool_run(*args):
        return subprocess.run([CLI, "extract", *map(str, args)], capture_output=True, text=True)

    r = tool_run(tmp_path / "missing", tmp_path / "f")
    assert r.returncode == 1 and "not a folder" in r.stderr
    (tmp_path / "empty").mkdir()
    r = tool_run(tmp_path / "empty", tmp_path / "f")
    assert r.returncode == 1 and "no images" in r.stderr
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(IMAGES / "view_0.jpg", bad / "a.jpg")
    (bad / "b.png").write_bytes(b"\x89PNG but not really")
    r = tool_run(bad, tmp_path / "f")
    assert r.returncode == 1 and "b.png" in r.stderr and not (tmp_path / "f").exists()
    stray = tmp_path / "stray"
    stray.mkdir()
    np.save(stray / "other.npy", np.zeros((2, 32), np.uint8))
    r = tool_run(IMAGES, stray)
    assert r.returncode == 1 and "other.npy" in r.stderr and os.listdir(stray) == ["other.npy"]
    (tmp_path / "file").write_text("x")
    r = tool_run(IMAGES, tmp_path / "file")
    assert r.returncode == 1 and "not a folder" in r.stderr
    r = tool_run(IMAGES, tmp_path / "f", "--descriptor", "sift")
    assert r.returncode == 2
    r = tool_run(IMAGES, tmp_path / "f", "--max-features", "0")
    assert r.returncode == 2 and "keypoint count" in r.stderr
    beside = tmp_path / "beside"
    shutil.copytree(IMAGES, beside)
    before = {n: (beside / n).read_bytes() for n in NAMES}
    r = tool_run(beside, beside)  # the features beside the images: the images are not touched
    assert r.returncode == 0, r.stderr
    assert {n: (beside / n).read_bytes() for n in NAMES} == before
    assert sorted(f for f in os.listdir(beside) if f.endswith(".npy")) == sorted(
        n + s for n in NAMES for s in (".npy", ".xy.npy"))
    r = tool_run(beside, beside)  # again: its own files are replaced, nothing else is refused
    assert r.returncode == 0, r.stderr
