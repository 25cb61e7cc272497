"""multireduce.colmap against SQLite itself and, where it is installed, pycolmap: new databases
(COLMAP's schema and rows exactly as pycolmap writes them), existing ones by name, every failure
leaving the database as it was, the text files; then COLMAP's own geometric verification and
mapper on databases we wrote, and the tool's C++ writer (MULTIREDUCE_CLI)."""

import os
import sqlite3
import subprocess
import types
from contextlib import closing

import numpy as np
import pytest

from multireduce import colmap

from colmap_scenes import (W, H, colmap3_database, dump, homography_pair, names_of, pycolmap_reference,
                           random_collection, result, scene)


def test_pair_id():
    assert colmap.pair_id(1, 2) == colmap.pair_id(2, 1) == 2147483647 + 2
    assert colmap.pair_id(2147483646, 5) == 2147483647 * 5 + 2147483646


def test_new_database_round_trip(tmp_path, rng):
    names, res, keypoints = random_collection(rng, 7)
    keypoints[1] = np.c_[keypoints[1], np.ones((len(keypoints[1]), 2), np.float32)]  # 4 columns: kept
    keypoints[2] = np.c_[keypoints[2], np.ones(len(keypoints[2]), np.float32)]  # 3 columns: x, y written
    db = tmp_path / "new.db"
    colmap.write_matches(db, names, res, image_size=(W, H), keypoints=keypoints)
    assert sorted(os.listdir(tmp_path)) == ["new.db"]
    assert colmap.image_ids(db) == {n: i + 1 for i, n in enumerate(names)}
    read = colmap.read_keypoints(db)
    for i, n in enumerate(names):
        np.testing.assert_array_equal(read[n], keypoints[i] if i != 2 else keypoints[i][:, :2])
    matches = colmap.read_matches(db)
    assert len(matches) == len(res.pairs)
    for p, (a, b) in enumerate(res.pairs):
        got = matches[(names[a], names[b])]
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, res.matches[res.offsets[p]:res.offsets[p + 1], :2])
    with closing(sqlite3.connect(db)) as c:
        assert c.execute("PRAGMA user_version").fetchone()[0] == 4020100
        ids = [pid for (pid,) in c.execute("SELECT pair_id FROM matches")]
    assert sorted(ids) == sorted(2147483647 * (a + 1) + b + 1 for a, b in res.pairs.tolist())


def test_existing_database_by_name(tmp_path, rng):
    names, res, keypoints = random_collection(rng, 6)
    assert len(res.pairs)
    db = tmp_path / "old.db"
    colmap3_database(db, names[::-1] + ["other.jpg"], [len(k) for k in keypoints[::-1]] + [5])  # ids reversed
    ids = {n: len(names) - i for i, n in enumerate(names)}
    ours, theirs = colmap.pair_id(ids[names[res.pairs[0][0]]], ids[names[res.pairs[0][1]]]), colmap.pair_id(1, 7)
    with closing(sqlite3.connect(db)) as c, c:
        c.executemany("INSERT INTO matches VALUES (?, 1, 2, zeroblob(8))", [(ours,), (theirs,)])
        c.executemany("INSERT INTO two_view_geometries(pair_id, rows, cols, config) VALUES (?, 0, 2, 2)",
                      [(ours,), (theirs,)])
    colmap.write_matches(db, names, res)
    matches = colmap.read_matches(db)
    assert len(matches) == len(res.pairs) + 1 and (names[-1], "other.jpg") in matches  # the other pair kept
    for p, (a, b) in enumerate(res.pairs):  # the larger index has the smaller id: columns swapped
        rows = res.matches[res.offsets[p]:res.offsets[p + 1]]
        np.testing.assert_array_equal(matches[(names[b], names[a])], rows[:, 1::-1])
    with closing(sqlite3.connect(db)) as c:
        assert c.execute("SELECT pair_id FROM two_view_geometries").fetchall() == [(theirs,)]


def test_failures_leave_the_database_as_it_was(tmp_path):
    names = ["a.jpg", "b.jpg", "c.jpg"]
    res = result([(0, 1), (0, 2)], [[(3, 2)], [(0, 0), (1, 9)]])
    db = tmp_path / "db"
    colmap3_database(db, ["a.jpg", "c.jpg"], [4, 9])
    before = db.read_bytes()
    with pytest.raises(ValueError, match=r"1 of the 3 images are not in the database \(b.jpg\)"):
        colmap.write_matches(db, names, res)
    assert db.read_bytes() == before
    colmap3_database(tmp_path / "db2", names, [4, 4, 9])
    before = (tmp_path / "db2").read_bytes()
    with pytest.raises(ValueError, match=r"pair \(a.jpg, c.jpg\), match 1: keypoint 9 of c.jpg is out of range "
                                         r"\(it has 9 keypoints\)"):
        colmap.write_matches(tmp_path / "db2", names, res)
    assert (tmp_path / "db2").read_bytes() == before
    with pytest.raises(ValueError, match="keypoint 3 of a.jpg is out of range"):
        colmap.write_matches(tmp_path / "new.db", names, res, image_size=(8, 8), keypoints=[np.zeros((0, 2))] * 3)
    assert sorted(os.listdir(tmp_path)) == ["db", "db2"]


def test_refused_databases(tmp_path):
    names, res = ["a.jpg", "b.jpg"], result([(0, 1)], [[(0, 0)]])
    (tmp_path / "text.db").write_bytes(b"x" * 4096)
    with pytest.raises(ValueError, match=r"not a COLMAP database \(not an SQLite file\)"):
        colmap.write_matches(tmp_path / "text.db", names, res)
    with closing(sqlite3.connect(tmp_path / "other.db")) as c:
        c.execute("CREATE TABLE t (x)")
    with pytest.raises(ValueError, match="not a COLMAP database: no table `images`"):
        colmap.write_matches(tmp_path / "other.db", names, res)
    with pytest.raises(FileNotFoundError):
        colmap.write_matches(tmp_path / "absent.db", names, res)
    with pytest.raises(FileExistsError, match="already exists"):
        colmap.write_matches(tmp_path / "other.db", names, res, image_size=(8, 8), keypoints=[np.ones((1, 2))] * 2)
    with pytest.raises(FileNotFoundError, match="cannot create it"):
        colmap.write_matches(tmp_path / "no" / "dir.db", names, res, image_size=(8, 8), keypoints=[np.ones((1, 2))] * 2)
    with pytest.raises(ValueError, match="both image_size and keypoints"):
        colmap.write_matches(tmp_path / "x.db", names, res, image_size=(8, 8))
    assert sorted(os.listdir(tmp_path)) == ["other.db", "text.db"]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes a read-only file anyway")
def test_read_only_database(tmp_path):
    db = colmap3_database(tmp_path / "ro.db", ["a", "b"], [1, 1])
    db.chmod(0o444)
    with pytest.raises(PermissionError, match="ro.db: not writable"):
        colmap.write_matches(db, ["a", "b"], result([(0, 1)], [[(0, 0)]]))


@pytest.mark.parametrize("change, message", [
    (lambda r, n: r.pairs.__setitem__(1, (2, 1)), r"pair 1 \(2, 1\): the first image must come before the second"),
    (lambda r, n: r.pairs.__setitem__(1, (1, 3)), r"pair 1 \(1, 3\): an image index out of range of the 3 names"),
    (lambda r, n: r.offsets.__setitem__(1, 3), r"pair 0 \(0, 1\): its offsets \[0, 3\) are not a range of the 2"),
    (lambda r, n: r.pairs.__setitem__(1, (0, 1)), r"pair \(0, 1\) is listed twice"),
    (lambda r, n: n.__setitem__(2, "a"), "the image name 'a' is given twice"),
], ids=["order", "range", "offsets", "twice", "names"])
def test_malformed_results(tmp_path, change, message):
    names, res = ["a", "b", "c"], result([(0, 1), (1, 2)], [[(0, 0)], [(0, 0)]])
    change(res, names)
    colmap3_database(tmp_path / "db", ["a", "b", "c"], [1, 1, 1])
    with pytest.raises(ValueError, match=message):
        colmap.write_matches(tmp_path / "db", names, res)
    with pytest.raises(ValueError, match=message):
        colmap.write_matches_text(tmp_path / "m.txt", names, res)


def test_device_like_results(tmp_path):
    """CuPy arrays come through .get(), PyTorch tensors through .cpu().numpy()."""
    class Cupyish:
        def __init__(self, a):
            self.a = a

        def get(self):
            return self.a

    Cupyish.__module__ = "cupy._core.core"

    class Torchish(Cupyish):
        def detach(self):
            return self

        def cpu(self):
            return types.SimpleNamespace(numpy=lambda: self.a)

    plain = result([(0, 1)], [[(1, 0), (0, 1)]])
    for wrap in (Cupyish, Torchish):
        res = types.SimpleNamespace(pairs=wrap(plain.pairs), offsets=wrap(plain.offsets), matches=wrap(plain.matches))
        colmap.write_matches_text(tmp_path / "m.txt", ["a", "b"], res)
        assert (tmp_path / "m.txt").read_text() == "a b\n1 0\n0 1\n\n"


def test_matches_text(tmp_path):
    names = ["a.jpg", "b.jpg", "dir/c.jpg", "d.jpg"]
    res = result([(0, 2), (1, 3), (2, 3)], [[(4, 5), (10, 0)], [], [(123456, 7)]])
    path = tmp_path / "matches.txt"
    path.write_text("an older file, replaced whole")
    colmap.write_matches_text(path, names, res)
    assert path.read_bytes() == b"a.jpg dir/c.jpg\n4 5\n10 0\n\nb.jpg d.jpg\n\ndir/c.jpg d.jpg\n123456 7\n\n"
    with pytest.raises(ValueError, match="holds whitespace"):
        colmap.write_matches_text(path, ["a b.jpg", "b.jpg", "c", "d"], res)
    assert sorted(os.listdir(tmp_path)) == ["matches.txt"]


def test_pair_list(tmp_path):
    names = ["a.jpg", "b.jpg", "dir/c.jpg", "d.jpg"]
    path = tmp_path / "pairs.txt"
    path.write_bytes(b"# pairs to match\n\na.jpg b.jpg\n  d.jpg\ta.jpg  \r\n   # indented\nb.jpg a.jpg\n"
                     b"dir/c.jpg d.jpg\na.jpg b.jpg\n   \n")
    pairs = colmap.read_pair_list(path, names)
    assert pairs.dtype == np.int32 and pairs.tolist() == [[0, 1], [0, 3], [2, 3]]
    path.write_text("")
    assert colmap.read_pair_list(path, names).shape == (0, 2)
    for text, message in [("# x\na.jpg b.jpg\na.jpg e.jpg\n", ":3: the image 'e.jpg' is not in the collection"),
                          ("\n\nd.jpg d.jpg\n", ":3: pairs the image 'd.jpg' with itself"),
                          ("a.jpg\n", ":1: expected two image names, found 1 words"),
                          ("a.jpg b.jpg d.jpg\n", ":1: expected two image names, found 3 words")]:
        path.write_text(text)
        with pytest.raises(ValueError) as e:
            colmap.read_pair_list(path, names)
        assert str(e.value) == f"{path}{message}"


def test_match_all_result_round_trip(tmp_path, rng):
    """match_all's own result object, written and read back pair by pair."""
    import multireduce as mr

    base = rng.integers(0, 256, (120, 32), dtype=np.uint8)
    orders = [rng.permutation(120)[:100] for _ in range(4)]
    found = mr.match_all([base[o] for o in orders], max_distance=0)  # the descriptors both images have
    names = [f"im{i}.jpg" for i in range(4)]
    colmap.write_matches(tmp_path / "db", names, found, image_size=(W, H),
                         keypoints=[rng.uniform(0, W, (100, 2)) for _ in names])
    matches = colmap.read_matches(tmp_path / "db")
    assert len(matches) == 6
    for i in range(4):
        for j in range(i + 1, 4):
            got = matches[(names[i], names[j])]
            np.testing.assert_array_equal(got, np.asarray(found.pair(i, j))[:, :2])
            assert (orders[i][got[:, 0]] == orders[j][got[:, 1]]).all()  # the same descriptor


# ---- pycolmap: COLMAP's own reading, verification and mapping of what we wrote ------------------

def test_schema_and_rows_are_pycolmaps(tmp_path):
    pycolmap = pytest.importorskip("pycolmap")
    reference = pycolmap_reference(pycolmap, tmp_path / "reference.db")
    names = names_of(reference)
    keypoints = list(colmap.read_keypoints(reference).values())
    colmap.write_matches(tmp_path / "ours.db", names, result([(0, 1)], [[(0, 1)]]), image_size=(W, H),
                         keypoints=keypoints)
    ours, theirs = dump(tmp_path / "ours.db"), dump(reference)
    for table in theirs:
        assert ours[table] == theirs[table], f"{table} differs (pycolmap {pycolmap.__version__})"


def test_pycolmap_reads_what_we_wrote(tmp_path, rng):
    pycolmap = pytest.importorskip("pycolmap")
    names, res, keypoints = random_collection(rng, 5)
    colmap.write_matches(tmp_path / "db", names, res, image_size=(W, H), keypoints=keypoints)
    db = pycolmap.Database.open(str(tmp_path / "db"))
    try:
        images = {image.name: image for image in db.read_all_images()}
        assert sorted(images) == sorted(names)
        for i, n in enumerate(names):
            np.testing.assert_array_equal(db.read_keypoints(images[n].image_id), keypoints[i])
            camera = db.read_camera(images[n].camera_id)
            assert camera.model_name == "SIMPLE_RADIAL" and (camera.width, camera.height) == (W, H)
            np.testing.assert_allclose(camera.params, [1.2 * W, W / 2, H / 2, 0])
        assert db.num_matched_image_pairs() == len(res.pairs)
        for p, (a, b) in enumerate(res.pairs):
            got = db.read_matches(images[names[a]].image_id, images[names[b]].image_id)
            np.testing.assert_array_equal(got, res.matches[res.offsets[p]:res.offsets[p + 1], :2])
    finally:
        db.close()


def test_pycolmap_database_receives_matches_by_name(tmp_path, rng):
    pycolmap = pytest.importorskip("pycolmap")
    reference = pycolmap_reference(pycolmap, tmp_path / "db")  # cameras, rigs, frames, images, keypoints
    names = names_of(reference)[::-1]  # the collection in the other order: every pair's ids reversed
    res = result([(0, 1), (0, 2), (1, 2)], [[(0, 1), (2, 3)], [(4, 4)], []])
    colmap.write_matches(reference, names, res)
    db = pycolmap.Database.open(str(reference))
    try:
        ids = {image.name: image.image_id for image in db.read_all_images()}
        for p, (a, b) in enumerate(res.pairs):
            expected = res.matches[res.offsets[p]:res.offsets[p + 1], :2]
            np.testing.assert_array_equal(db.read_matches(ids[names[a]], ids[names[b]]), expected)
            np.testing.assert_array_equal(db.read_matches(ids[names[b]], ids[names[a]]), expected[:, ::-1])
    finally:
        db.close()


def test_geometric_verification_finds_the_homography(tmp_path):
    pycolmap = pytest.importorskip("pycolmap")
    names, res, keypoints, true_rows = homography_pair(np.random.default_rng(7))
    db = str(tmp_path / "db")
    colmap.write_matches(db, names, res, image_size=(W, H), keypoints=keypoints)
    (tmp_path / "pairs.txt").write_text(f"{names[0]} {names[1]}\n")
    pycolmap.verify_matches(db, str(tmp_path / "pairs.txt"))
    database = pycolmap.Database.open(db)
    try:
        geometry = database.read_two_view_geometry(1, 2)
    finally:
        database.close()
    inliers = {tuple(r) for r in geometry.inlier_matches.tolist()}
    assert len(inliers) >= 0.9 * len(true_rows)
    assert len(inliers & true_rows) >= 0.97 * len(inliers)


def test_mapper_reconstructs_from_what_we_wrote(tmp_path):
    pycolmap = pytest.importorskip("pycolmap")
    names, res, keypoints = scene(np.random.default_rng(11), images=5, points=300)
    db = str(tmp_path / "db")
    colmap.write_matches(db, names, res, image_size=(W, H), keypoints=keypoints)
    pycolmap.geometric_verification(db)  # every pair with matches (`colmap geometric_verifier`)
    (tmp_path / "sparse").mkdir()
    reconstructions = pycolmap.incremental_mapping(db, str(tmp_path), str(tmp_path / "sparse"))
    best = max(reconstructions.values(), key=lambda r: r.num_reg_images())
    assert best.num_reg_images() == 5 and best.num_points3D() >= 250


@pytest.mark.skipif(not os.environ.get("MULTIREDUCE_CLI"), reason="MULTIREDUCE_CLI (the built multireduce) not set")
def test_cli_database_is_colmaps(tmp_path):
    """`multireduce match-all DIR --colmap-db DB --image-size W H -o OUT.npz`: the C++ writer's
    database has pycolmap's schema, holds the .npz's matches, and COLMAP maps from it."""
    pycolmap = pytest.importorskip("pycolmap")
    rng = np.random.default_rng(5)
    names, _, keypoints = scene(rng, images=4, points=200, point_order=True)
    base = rng.integers(0, 256, (200, 32), dtype=np.uint8)
    (tmp_path / "dir").mkdir()
    for name, k, perm in zip(names, keypoints, [rng.permutation(200) for _ in names]):
        np.save(tmp_path / "dir" / f"{name}.npy", base[perm])
        np.save(tmp_path / "dir" / f"{name}.xy.npy", k[perm])
    db, out = tmp_path / "db", tmp_path / "out.npz"
    subprocess.run([os.environ["MULTIREDUCE_CLI"], "match-all", str(tmp_path / "dir"), "--colmap-db", str(db),
                    "--image-size", str(W), str(H), "-o", str(out)], check=True)
    with np.load(out) as npz:
        found = types.SimpleNamespace(**{k: npz[k] for k in ("pairs", "offsets", "matches")})
        cli_names = [str(n) for n in npz["names"]] if "names" in npz else sorted(names)
    reference = dump(pycolmap_reference(pycolmap, tmp_path / "reference.db", len(names)), schema_only=True)
    assert dump(db, schema_only=True) == reference
    matches = colmap.read_matches(db)
    assert len(matches) == len(found.pairs) and sum(len(m) for m in matches.values()) == len(found.matches) > 0
    for p, (a, b) in enumerate(found.pairs):
        np.testing.assert_array_equal(matches[(cli_names[a], cli_names[b])],
                                      found.matches[found.offsets[p]:found.offsets[p + 1], :2])
    database = pycolmap.Database.open(str(db))
    try:
        assert database.num_images() == len(names) and database.num_matched_image_pairs() == len(found.pairs)
    finally:
        database.close()
    pycolmap.geometric_verification(str(db))
    (tmp_path / "sparse").mkdir()
    reconstructions = pycolmap.incremental_mapping(str(db), str(tmp_path), str(tmp_path / "sparse"))
    assert max(r.num_reg_images() for r in reconstructions.values()) == len(names)


# ---- keypoints that do not fit, names SQLite readers cannot decode, what a killed writer leaves ---


@pytest.mark.parametrize("script, message", [
    ("UPDATE keypoints SET rows = 5000, data = zeroblob(40000) WHERE image_id = 3",
     "the image c.jpg has 5000 keypoints in the database and 9 descriptors in the collection"),
    ("UPDATE keypoints SET rows = -5 WHERE image_id = 2", "the keypoints of b.jpg are not what COLMAP reads: rows -5"),
    ("DELETE FROM keypoints WHERE image_id = 1", "the image a.jpg has no keypoints in the database"),
    ("UPDATE keypoints SET data = zeroblob(8) WHERE image_id = 3", "rows 9, cols 2, 8 bytes of data"),
], ids=["count", "negative", "absent", "data"])
def test_keypoints_that_do_not_fit_the_descriptors(tmp_path, script, message):
    names, res = ["a.jpg", "b.jpg", "c.jpg"], result([(0, 1), (0, 2)], [[(3, 2)], [(0, 8)]])
    db = colmap3_database(tmp_path / "db", names, [4, 4, 9])
    counts = [np.zeros((4, 32), np.uint8), 4, 9]  # the descriptors themselves, or their counts
    colmap.write_matches(db, names, res, descriptor_counts=counts)  # as made, it fits
    with closing(sqlite3.connect(db)) as c, c:
        c.execute(script)
    before = db.read_bytes()
    with pytest.raises(ValueError, match=message):
        colmap.write_matches(db, names, res, descriptor_counts=counts)
    assert db.read_bytes() == before and sorted(os.listdir(tmp_path)) == ["db"]


def test_new_database_keypoints_must_be_finite_and_the_descriptors_count(tmp_path):
    names, res = ["a.jpg", "b.jpg"], result([(0, 1)], [[(0, 1)]])
    keypoints = [np.ones((2, 2), np.float32), np.ones((3, 6), np.float32)]
    with pytest.raises(ValueError, match="the image b.jpg has 3 keypoints and 4 descriptors"):
        colmap.write_matches(tmp_path / "new.db", names, res, image_size=(8, 8), keypoints=keypoints,
                             descriptor_counts=[2, 4])
    for bad, shown in ((np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")):
        keypoints[1][2, 4] = bad
        with pytest.raises(ValueError, match=f"the keypoints of b.jpg: keypoint 2 has {shown} in column 4"):
            colmap.write_matches(tmp_path / "new.db", names, res, image_size=(8, 8), keypoints=keypoints)
    keypoints[1][2, 4] = 0.5
    assert os.listdir(tmp_path) == []
    colmap.write_matches(tmp_path / "new.db", names, res, image_size=(8, 8), keypoints=keypoints,
                         descriptor_counts=[2, 3])
    assert colmap.read_keypoints(tmp_path / "new.db")["b.jpg"][2, 4] == 0.5


def test_names_that_are_not_utf8_and_directories_are_refused(tmp_path):
    name = os.fsdecode(b"caf\xe9.jpg")  # a Latin-1 file name as Python lists it
    res = result([(0, 1)], [[(0, 0)]])
    with pytest.raises(ValueError, match=r"the image name 'caf\\xe9.jpg' is not UTF-8"):
        colmap.write_matches(tmp_path / "new.db", ["a.jpg", name], res, image_size=(8, 8),
                             keypoints=[np.ones((1, 2))] * 2)
    db = colmap3_database(tmp_path / "db", ["a.jpg", "b.jpg"], [1, 1])
    with pytest.raises(ValueError, match="is not UTF-8"):
        colmap.write_matches(db, ["a.jpg", name], res)
    (tmp_path / "dir.db").mkdir()
    with pytest.raises(IsADirectoryError, match="dir.db: is a directory"):
        colmap.write_matches(tmp_path / "dir.db", ["a.jpg", "b.jpg"], res)
    assert sorted(os.listdir(tmp_path)) == ["db", "dir.db"]


def _write_new_database_then_wait(path):
    """A child's code: a new database whose keypoints take a while to write (SQLite busy), killed midway."""
    return (
        "import sys, numpy as np, types\n"
        "from multireduce import colmap\n"
        "n = 200\n"
        "res = types.SimpleNamespace(pairs=np.array([(i, i + 1) for i in range(n - 1)]), offsets=np.arange(n) * 2000,\n"
        "                            matches=np.zeros((2000 * (n - 1), 3), np.int64))\n"
        "print('ready', flush=True)\n"
        f"colmap.write_matches({str(path)!r}, [f'i{{k}}' for k in range(n)], res, image_size=(8, 8),\n"
        "                     keypoints=[np.ones((20000, 6), np.float32)] * n)\n"
    )


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_a_killed_writer_leaves_nothing_the_next_one_keeps(tmp_path, sig):
    # SIGINT is KeyboardInterrupt: the temporary goes at once. SIGTERM and SIGKILL end Python with
    # no clean-up: the next new database of that name removes the dead process's temporary.
    import signal
    import sys
    import time
    path = tmp_path / "new.db"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", _write_new_database_then_wait(path)], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert child.stdout.readline().strip() == b"ready"
    deadline = time.monotonic() + 60
    while not [n for n in os.listdir(tmp_path) if n.startswith(".new.db.tmp-")] and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)
    child.send_signal(getattr(signal, sig))
    child.communicate(timeout=60)
    left = os.listdir(tmp_path)
    if sig == "SIGINT":
        assert left == [], left
    else:  # the temporary, with no database
        assert len(left) == 1 and left[0].startswith(".new.db.tmp-"), left
    res = result([(0, 1)], [[(0, 0)]])
    colmap.write_matches(path, ["a", "b"], res, image_size=(8, 8), keypoints=[np.ones((1, 2))] * 2)
    assert os.listdir(tmp_path) == ["new.db"]
