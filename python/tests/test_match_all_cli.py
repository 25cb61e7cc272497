"""`multireduce match-all` (the tool at MULTIREDUCE_CLI, which ctest sets when the tool is built):
the sample collection's .npz equal to OpenCV's BFMatcher answer for every pair (ratio test, and
with the cross-check), pair lists and sequential pairs as slices of every pair's answer, the text
for COLMAP, the image blocks on the GPU, and bad input: a clear error, exit code 1 or 2, nothing
written."""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

CLI = os.environ.get("MULTIREDUCE_CLI")
pytestmark = pytest.mark.skipif(not CLI, reason="MULTIREDUCE_CLI (the built multireduce) not set")
DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "match"
COLLECTION = DATA / "collection"


def run(*args, rc=0):
    p = subprocess.run([CLI, "match-all", *map(str, args)], capture_output=True, text=True)
    assert p.returncode == rc, f"exit {p.returncode}, expected {rc}\nstdout: {p.stdout}\nstderr: {p.stderr}"
    return p


@pytest.fixture(scope="module")
def opencv():
    return np.load(DATA / "collection_opencv.npz")


@pytest.mark.parametrize("backend", ("auto", "cpu"))
def test_every_pair_is_opencvs(tmp_path, opencv, backend):
    out = tmp_path / "m.npz"
    p = run(COLLECTION, "--ratio", "0.8", "-o", out, "--backend", backend, "--homographies",
            DATA / "collection_homographies.npy")
    assert "22893 matches kept in 28 pairs of 8 images" in p.stderr
    assert "21018 of them (91.8%) agree with the homographies" in p.stderr
    got = np.load(out)
    assert got["names"].dtype.kind == "U"
    for key in ("names", "pairs", "offsets", "matches"):
        np.testing.assert_array_equal(got[key], opencv[key])
    assert got["pairs"].dtype == np.int32 and got["offsets"].dtype == np.int64 and got["matches"].dtype == np.int32
    run(COLLECTION, "--ratio", "0.8", "--cross-check", "-o", out, "--backend", backend)
    got = np.load(out)
    for key in ("pairs", "offsets", "matches"):
        np.testing.assert_array_equal(got[key], opencv["cross_" + key])


def pair_rows(npz, i, j):
    p = int(np.nonzero((npz["pairs"][:, 0] == i) & (npz["pairs"][:, 1] == j))[0][0])
    return npz["matches"][npz["offsets"][p]:npz["offsets"][p + 1]]


def test_pair_lists_and_sequential(tmp_path, opencv):
    out = tmp_path / "m.npz"
    run(COLLECTION, "--ratio", "0.8", "--sequential", "2", "-o", out)
    got = np.load(out)
    assert got["pairs"].tolist() == [[i, j] for i in range(8) for j in range(i + 1, min(i + 3, 8))]
    for i, j in got["pairs"]:
        np.testing.assert_array_equal(pair_rows(got, i, j), pair_rows(opencv, i, j))
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("# retrieval's proposals\nview_3 view_1\n\n  view_0 view_7  \nview_1 view_3\n")
    p = run(COLLECTION, "--ratio", "0.8", "--pairs", pairs, "-o", out)
    assert "1 repeated pairs" in p.stderr
    got = np.load(out)
    assert got["pairs"].tolist() == [[1, 3], [0, 7]]
    for i, j in got["pairs"]:
        np.testing.assert_array_equal(pair_rows(got, i, j), pair_rows(opencv, i, j))


def test_colmap_text(tmp_path, opencv):
    text = tmp_path / "matches.txt"
    run(COLLECTION, "--ratio", "0.8", "--colmap-txt", text)
    blocks = text.read_text().split("\n\n")
    assert blocks[-1] == ""
    assert len(blocks) - 1 == len(opencv["pairs"])
    for block, (i, j) in zip(blocks, opencv["pairs"]):
        lines = block.split("\n")
        assert lines[0] == f"view_{i} view_{j}"
        rows = np.array([list(map(int, l.split())) for l in lines[1:]], np.int64).reshape(-1, 2)
        np.testing.assert_array_equal(rows, pair_rows(opencv, i, j)[:, :2])


def test_image_blocks_give_the_same_answer(tmp_path, opencv):
    # 1 MiB of GPU memory: a few views at a time (on the CPU the budget does not apply).
    out = tmp_path / "m.npz"
    run(COLLECTION, "--ratio", "0.8", "--gpu-memory", "1", "-o", out)
    np.testing.assert_array_equal(np.load(out)["matches"], opencv["matches"])


def test_prints_a_table_without_outputs(opencv):
    p = run(COLLECTION, "--ratio", "0.8", "--sequential", "1")
    lines = p.stdout.strip().split("\n")
    assert lines[0] == "image1,image2,matches" and len(lines) == 8
    assert lines[1] == f"view_0,view_1,{opencv['offsets'][1] - opencv['offsets'][0]}"


def copy_collection(tmp_path, names=None):
    d = tmp_path / "c"
    d.mkdir()
    for f in COLLECTION.iterdir():
        if names is None or f.name.split(".")[0] in names:
            shutil.copy(f, d / f.name)
    return d


def test_bad_input(tmp_path):
    out = tmp_path / "m.npz"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "no descriptor files" in run(empty, "-o", out, rc=1).stderr
    assert "not a folder" in run(tmp_path / "missing", "-o", out, rc=1).stderr
    d = copy_collection(tmp_path, {"view_0", "view_1"})
    np.save(d / "wide.npy", np.zeros((3, 64), np.uint8))
    assert "mixed descriptor widths" in run(d, "-o", out, rc=1).stderr
    (d / "wide.npy").unlink()
    np.save(d / "floats.npy", np.zeros((3, 32), np.float32))
    assert "must be a 2-d uint8 array" in run(d, "-o", out, rc=1).stderr
    (d / "floats.npy").unlink()
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("view_0 view_1\nview_0 view_9\n")
    p = run(d, "--pairs", pairs, "-o", out, rc=1)
    assert "view_9" in p.stderr and ":2" in p.stderr
    pairs.write_text("view_1 view_1\n")
    assert "itself" in run(d, "--pairs", pairs, "-o", out, rc=1).stderr
    assert not out.exists()
    # usage errors: exit 2
    run(d, "--pairs", pairs, "--sequential", "1", rc=2)
    run(d, "--ratio", "2", rc=2)
    run(d, "--image-size", "512", rc=2)


def test_bad_databases(tmp_path):
    d = copy_collection(tmp_path, {"view_0", "view_1"})
    out = tmp_path / "m.npz"
    not_db = tmp_path / "not.db"
    not_db.write_bytes(b"not a database at all" * 10)
    before = not_db.read_bytes()
    assert run(d, "--colmap-db", not_db, "-o", out, rc=1).stderr
    assert not_db.read_bytes() == before and not out.exists()
    assert "no such database" in run(d, "--colmap-db", tmp_path / "none.db", rc=1).stderr
    db = tmp_path / "new.db"
    run(d, "--ratio", "0.8", "--colmap-db", db, "--image-size", "512", "512")
    assert "exists already" in run(d, "--colmap-db", db, "--image-size", "512", "512", rc=1).stderr
    # A database whose images are other names: refused, left as it was, no .npz written.
    other = copy_collection(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path, {"view_2", "view_3"})
    before = db.read_bytes()
    assert "view_2" in run(other, "--colmap-db", db, "-o", out, rc=1).stderr
    assert db.read_bytes() == before and not out.exists()
    # Keypoints are needed for a new database.
    (d / "view_1.xy.npy").unlink()
    assert "keypoints" in run(d, "--colmap-db", tmp_path / "new2.db", "--image-size", "512", "512", rc=1).stderr
    assert not (tmp_path / "new2.db").exists()


def test_rules_combine_as_pythons(tmp_path):
    # `match` and `match-all` take any set of rules, as mr.match and mr.match_all do: a match passes
    # each rule given (the tool once refused --ratio with --margin).
    import multireduce as mr
    q, t = np.load(COLLECTION / "view_0.npy"), np.load(COLLECTION / "view_1.npy")
    for flags, keywords in ((["--ratio", "0.8", "--margin", "6"], dict(ratio=0.8, margin=6)),
                            (["--ratio", "0.9", "--max-distance", "40"], dict(ratio=0.9, max_distance=40)),
                            (["--margin", "3", "--max-distance", "50", "--cross-check"],
                             dict(margin=3, max_distance=50, cross_check=True))):
        out = tmp_path / "m.npy"
        p = subprocess.run([CLI, "match", COLLECTION / "view_0.npy", COLLECTION / "view_1.npy", *flags, "-o", out,
                            "--backend", "cpu"], capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        want = np.asarray(mr.match(q, t, **keywords))
        np.testing.assert_array_equal(np.load(out), want.reshape(-1, 3), err_msg=str(flags))
        alone = np.asarray(mr.match(q, t, **{k: v for k, v in list(keywords.items())[:1]}))
        assert 0 < len(want) < len(alone), flags  # the second rule took some away
        run(COLLECTION, *flags, "-o", tmp_path / "all.npz", "--sequential", "1")
        got = np.load(tmp_path / "all.npz")
        np.testing.assert_array_equal(pair_rows(got, 0, 1), want.reshape(-1, 3))
