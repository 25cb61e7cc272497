"""`multireduce match-all` (the tool at MULTIREDUCE_CLI) under bad input and faults from outside:
no output ever lands on an input (by device and inode: links and hard links too), one command's
outputs change together or not at all (the database committed last, the files renamed after it),
nothing is left behind by a signal (SIGKILL: removed by the next run), keypoints that do not fit
the descriptors are refused, the CSV table reads back with Python's csv, and what is not a
collection file, a database or an image size says so. Every failure is checked to leave the
inputs' and the database's bytes as they were."""

import csv
import io
import os
import shutil
import signal
import sqlite3
import stat
import subprocess
import tempfile
import time
from contextlib import closing
from pathlib import Path

import numpy as np
import pytest

CLI = os.environ.get("MULTIREDUCE_CLI")
pytestmark = pytest.mark.skipif(not CLI, reason="MULTIREDUCE_CLI (the built multireduce) not set")
COLLECTION = Path(__file__).resolve().parents[2] / "tests" / "data" / "match" / "collection"


def run(*args, rc=0):
    p = subprocess.run([CLI, "match-all", *map(str, args)], capture_output=True, text=True)
    assert p.returncode == rc, f"exit {p.returncode}, expected {rc}\nstdout: {p.stdout}\nstderr: {p.stderr}"
    return p


def snapshot(directory):
    """{name: bytes} of the regular files of a directory (links followed), and the names of the rest."""
    out = {}
    for entry in sorted(os.listdir(directory)):
        path = os.path.join(directory, entry)
        out[entry] = Path(path).read_bytes() if os.path.isfile(path) else os.lstat(path).st_mode
    return out


def table_rows(database):
    """Every table's rows of a database, read on a copy of the file alone (no journal beside it),
    after SQLite's integrity check of that copy."""
    with tempfile.TemporaryDirectory() as elsewhere:
        copy = Path(elsewhere) / "copy.db"
        shutil.copyfile(database, copy)
        db = sqlite3.connect(f"file:{copy}?mode=ro", uri=True)
        try:
            assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
            return {t: sorted(db.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in tables}
        finally:
            db.close()


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "photos"
    shutil.copytree(COLLECTION, d)
    return d


@pytest.fixture
def database(tmp_path, folder):
    """A COLMAP database of the collection (made by the tool) holding each image's next neighbour's matches."""
    db = tmp_path / "project.db"
    run(folder, "--ratio", "0.8", "--sequential", "1", "--colmap-db", db, "--image-size", "512", "512")
    return db


# ---- outputs on inputs -----------------------------------------------------------------------------


def test_no_output_lands_on_an_input(tmp_path, folder, database):
    inputs = snapshot(folder)
    db_before = database.read_bytes()
    pairs = tmp_path / "pairs.txt"
    pairs.write_text("view_0 view_1\n")
    h = tmp_path / "h.npy"
    np.save(h, np.tile(np.eye(3), (8, 1, 1)))
    os.link(folder / "view_3.npy", tmp_path / "hard.npz")
    os.symlink(folder / "view_4.xy.npy", tmp_path / "link.txt")
    extra = snapshot(tmp_path)
    cases = [
        (["-o", folder / "view_0.npy"], "that is the descriptors of image view_0"),
        (["--colmap-txt", folder / "view_1.xy.npy"], "that is the keypoints of image view_1"),
        (["--colmap-db", folder / "view_2.npy"], "that is the descriptors of image view_2"),
        (["-o", tmp_path / "hard.npz"], "that is the descriptors of image view_3"),
        (["--colmap-txt", tmp_path / "link.txt"], "that is the keypoints of image view_4"),
        (["--pairs", pairs, "-o", pairs], "that is --pairs"),
        (["--homographies", h, "-o", h], "that is --homographies"),
        (["--colmap-db", database, "-o", database], "are the same file"),
        (["--colmap-db", database, "--colmap-txt", database], "are the same file"),
        (["-o", folder / "matches.npy"], "in the collection folder would be taken for an image's descriptors"),
        (["-o", tmp_path / "same.npz", "--colmap-txt", tmp_path / "same.npz"], "are the same file"),
    ]
    for args, message in cases:
        p = run(folder, "--ratio", "0.8", *args, rc=1)
        assert message in p.stderr, (args, p.stderr)
        assert snapshot(folder) == inputs, args
        assert database.read_bytes() == db_before, args
        assert snapshot(tmp_path) == extra, args


# ---- all or nothing --------------------------------------------------------------------------------


def test_outputs_change_together_or_not_at_all(tmp_path, folder, database):
    before = database.read_bytes()
    for args in (["-o", "/dev/full"], ["--colmap-txt", "/dev/full"], ["-o", tmp_path / "m.npz", "--colmap-txt",
                                                                        "/dev/full"]):
        p = run(folder, "--ratio", "0.8", "--colmap-db", database, *args, rc=1)
        assert "No space left on device" in p.stderr
        assert database.read_bytes() == before, args
        assert sorted(os.listdir(tmp_path)) == ["photos", "project.db"], args  # no journal, no temporary
    # A new database with an output that fails: no database.
    p = run(folder, "--ratio", "0.8", "--colmap-db", tmp_path / "new.db", "--image-size", "512", "512", "-o",
            "/dev/full", rc=1)
    assert "No space left on device" in p.stderr
    assert sorted(os.listdir(tmp_path)) == ["photos", "project.db"]
    # The database refusing (an image it does not have): the files keep their old bytes.
    (tmp_path / "m.npz").write_bytes(b"old")
    (tmp_path / "m.txt").write_bytes(b"old text")
    shutil.copy(folder / "view_0.npy", folder / "stranger.npy")
    p = run(folder, "--ratio", "0.8", "--colmap-db", database, "-o", tmp_path / "m.npz", "--colmap-txt",
            tmp_path / "m.txt", rc=1)
    assert "stranger" in p.stderr
    assert (tmp_path / "m.npz").read_bytes() == b"old" and (tmp_path / "m.txt").read_bytes() == b"old text"
    assert database.read_bytes() == before
    # And all of them together when nothing fails.
    (folder / "stranger.npy").unlink()
    run(folder, "--ratio", "0.8", "--colmap-db", database, "-o", tmp_path / "m.npz", "--colmap-txt", tmp_path / "m.txt")
    assert len(table_rows(database)["matches"]) == 28
    assert len(np.load(tmp_path / "m.npz")["pairs"]) == 28
    assert (tmp_path / "m.txt").read_text().count("\n\n") == 28


def can_mount():
    if os.geteuid() != 0 or not shutil.which("mount"):
        return False
    probe = Path(f"/tmp/mr-mount-probe-{os.getpid()}")
    probe.mkdir(exist_ok=True)
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(probe)], capture_output=True).returncode == 0
    if ok:
        subprocess.run(["umount", str(probe)])
    probe.rmdir()
    return ok


@pytest.mark.skipif(not can_mount(), reason="needs root and mount (a small tmpfs for the full disk)")
@pytest.mark.parametrize("room_kib", [8, 40, 96, 160])
@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_a_full_disk_during_the_commit_leaves_the_database_as_it_was(tmp_path, folder, database, room_kib, journal):
    # The database on a tmpfs with room for little more than itself: writing every pair's matches
    # runs out of space -- in the rollback journal, or as the file grows at the commit, by the room
    # left. The database, read as a copy of the file alone, is what it was, no journal is left
    # beside it, and the .npz written elsewhere keeps its old bytes.
    disk = tmp_path / "small"
    disk.mkdir()
    size = database.stat().st_size
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size + room_kib * 1024}", "tmpfs", str(disk)], check=True)
    try:
        db = disk / "project.db"
        shutil.copy(database, db)
        with closing(sqlite3.connect(db)) as c:  # COLMAP itself leaves its databases in WAL mode
            assert c.execute(f"PRAGMA journal_mode = {journal}").fetchone()[0] == journal
        before = table_rows(db)
        (tmp_path / "m.npz").write_bytes(b"old")
        p = run(folder, "--ratio", "0.8", "--colmap-db", db, "-o", tmp_path / "m.npz", rc=1)
        assert str(db) in p.stderr and ("full" in p.stderr or "I/O error" in p.stderr), p.stderr
        left = sorted(os.listdir(disk))
        if journal == "wal" and left != ["project.db"]:
            # No room even for the log's index: SQLite's log is left, holding nothing committed, and
            # the message says so; the file alone is the database as it was.
            assert set(left) <= {"project.db", "project.db-wal", "project.db-shm"}, left
            assert "write-ahead log" in p.stderr and "is left beside it" in p.stderr, p.stderr
        else:
            assert left == ["project.db"], "a journal was left beside the database"
        assert table_rows(db) == before
        assert (tmp_path / "m.npz").read_bytes() == b"old"
    finally:
        subprocess.run(["umount", "-l", str(disk)])


# ---- signals ---------------------------------------------------------------------------------------


def large_collection(d, rng, images=16, rows=4000):
    d.mkdir()
    for n in range(images):
        np.save(d / f"img_{n:02d}.npy", rng.integers(0, 256, (rows, 32), dtype=np.uint8))
        np.save(d / f"img_{n:02d}.xy.npy", rng.uniform(0, 1000, (rows, 6)).astype(np.float32))


def wait_until_open(pid, path, limit=60.0):
    """Waits until process pid holds `path` open (the database opened for writing, or its temporary)."""
    deadline = time.monotonic() + limit
    target = os.path.realpath(path)
    while time.monotonic() < deadline:
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                if link == target or os.path.basename(link).startswith("." + os.path.basename(target) + ".tmp-"):
                    return True
        except FileNotFoundError:
            return False
        time.sleep(0.002)
    return False


def test_signals_leave_nothing_behind(tmp_path, rng):
    # Forked runs of a collection large enough to take a while, each killed at a random point (its
    # seed logged by the rng fixture): at a random time, or a random time after it opened the
    # database. SIGTERM and SIGINT leave the directory as it was (the database as it was, or with
    # every new match); SIGKILL may leave a new database's temporary, which the next run removes,
    # or an existing one's journal, which SQLite applies when the database is next opened.
    photos = tmp_path / "photos"
    large_collection(photos, rng)
    work = tmp_path / "work"
    work.mkdir()
    existing = work / "existing.db"
    run(photos, "--sequential", "1", "--colmap-db", existing, "--image-size", "1000", "1000", "--backend", "cpu")
    old_rows = table_rows(existing)
    started = time.monotonic()
    run(photos, "--sequential", "3", "--colmap-db", work / "full.db", "--image-size", "1000", "1000", "--backend", "cpu")
    whole = time.monotonic() - started
    new_rows = table_rows(work / "full.db")
    (work / "full.db").unlink()
    pristine = existing.read_bytes()
    for trial in range(12):
        sig = [signal.SIGTERM, signal.SIGINT, signal.SIGKILL][trial % 3]
        new = trial % 2 == 0
        target = work / "new.db" if new else existing
        args = [CLI, "match-all", photos, "--sequential", "3", "--colmap-db", target, "--backend", "cpu"]
        if new:
            args += ["--image-size", "1000", "1000"]
        synced = rng.random() < 0.5
        delay = float(rng.uniform(0, 0.05 if synced else whole))
        child = subprocess.Popen(list(map(str, args)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if synced:
            wait_until_open(child.pid, target)
        time.sleep(delay)
        child.send_signal(sig)
        _, err = child.communicate(timeout=120)
        what = f"trial {trial}: {sig.name} {'synced ' if synced else ''}+{delay:.3f} s, {'new' if new else 'existing'}"
        print(what, "exit", child.returncode)
        assert child.returncode in (0, -sig), f"{what}: exit {child.returncode}: {err.decode()}"
        left = sorted(os.listdir(work))
        if sig == signal.SIGKILL and new:
            assert all(n == "existing.db" or n == "new.db" or n.startswith(".new.db.tmp-") for n in left), (what, left)
            if "new.db" not in left:
                run(photos, "--sequential", "1", "--colmap-db", target, "--image-size", "1000", "1000", "--backend",
                    "cpu")  # the next run of that name removes the killed run's temporary
        elif sig == signal.SIGKILL:
            assert set(left) <= {"existing.db", "existing.db-journal", "new.db"}, (what, left)
            db = sqlite3.connect(existing)  # a read-write open applies a hot journal
            db.execute("SELECT count(*) FROM images").fetchone()
            db.close()
        left = sorted(os.listdir(work))
        assert left in (["existing.db"], ["existing.db", "new.db"]), (what, left)
        rows = table_rows(existing)
        assert rows in (old_rows, new_rows), f"{what}: the database is neither as it was nor complete"
        if new and "new.db" in left:
            (work / "new.db").unlink()
        existing.write_bytes(pristine)


# ---- keypoints that do not fit ----------------------------------------------------------------------


def test_keypoints_that_do_not_fit_the_descriptors_are_refused(tmp_path, folder, database):
    for script, message in (
        ("UPDATE keypoints SET rows = 5000, data = zeroblob(40000) WHERE image_id = 3",
         "the image view_2 has 5000 keypoints in the database and"),
        ("UPDATE keypoints SET rows = -5 WHERE image_id = 2", "the keypoints of view_1 are not what COLMAP reads"),
        ("DELETE FROM keypoints WHERE image_id = 1", "the image view_0 has no keypoints in the database"),
    ):
        db = tmp_path / "edited.db"
        shutil.copy(database, db)
        with sqlite3.connect(db) as c:
            c.execute(script)
        c.close()
        before = db.read_bytes()
        p = run(folder, "--ratio", "0.8", "--colmap-db", db, "-o", tmp_path / "m.npz", rc=1)
        assert message in p.stderr, (script, p.stderr)
        if "5000" in message:
            assert f"and {len(np.load(folder / 'view_2.npy'))} descriptors in the collection" in p.stderr
        assert db.read_bytes() == before and not (tmp_path / "m.npz").exists()
        db.unlink()
    # A new database: NaN or infinite keypoints are refused, naming the image and the keypoint.
    xy = np.load(folder / "view_5.xy.npy")
    for bad in (np.nan, np.inf):
        xy[7, 1] = bad
        np.save(folder / "view_5.xy.npy", xy)
        p = run(folder, "--ratio", "0.8", "--colmap-db", tmp_path / "new.db", "--image-size", "512", "512", rc=1)
        assert "the keypoints of view_5: keypoint 7 has" in p.stderr and "positions must be finite" in p.stderr
        assert not (tmp_path / "new.db").exists()


# ---- text out, and what is not a collection file, a database or an image size ----------------------


def test_the_csv_table_reads_back(tmp_path, folder):
    names = ["plain", "a,b", 'say "cheese"', "two\nlines", "cr\rhere"]
    d = tmp_path / "odd"
    d.mkdir()
    for n, name in enumerate(names):
        shutil.copy(folder / f"view_{n}.npy", d / f"{name}.npy")
    p = subprocess.run([CLI, "match-all", str(d), "--ratio", "0.8"], capture_output=True)  # bytes: no newline translation
    assert p.returncode == 0, p.stderr
    rows = list(csv.reader(io.StringIO(p.stdout.decode(), newline="")))
    assert rows[0] == ["image1", "image2", "matches"]
    expected = sorted(names)
    assert [r[:2] for r in rows[1:]] == [[expected[i], expected[j]] for i in range(5) for j in range(i + 1, 5)]
    assert all(r[2].isdigit() for r in rows[1:])


def test_what_is_not_a_collection_file_is_refused(tmp_path, folder):
    before = snapshot(folder)
    cases = [
        (lambda: os.symlink(tmp_path / "gone.npy", folder / "view_9.npy"), "view_9.npy: a symbolic link to nothing"),
        (lambda: os.symlink(tmp_path / "gone.npy", folder / "view_9.xy.npy"), "view_9.xy.npy: a symbolic link to nothing"),
        (lambda: os.mkfifo(folder / "view_9.npy"), "view_9.npy: a FIFO, not a .npy file"),
        (lambda: (folder / "view_9.npy").mkdir(), "view_9.npy: a directory, not a .npy file"),
    ]
    for make, message in cases:
        make()
        p = run(folder, "--ratio", "0.8", "-o", tmp_path / "m.npz", rc=1)
        assert message in p.stderr, p.stderr
        assert not (tmp_path / "m.npz").exists()
        for n in ("view_9.npy", "view_9.xy.npy"):
            path = folder / n
            if path.is_dir() and not path.is_symlink():
                path.rmdir()
            elif os.path.lexists(path):
                path.unlink()
        assert snapshot(folder) == before
    (tmp_path / "db.d").mkdir()
    assert "--colmap-db " in run(folder, "--colmap-db", tmp_path / "db.d", rc=1).stderr
    assert "is a directory" in run(folder, "--colmap-db", tmp_path / "db.d", rc=1).stderr
    assert "not a regular file" in run(folder, "--colmap-db", "/dev/null", rc=1).stderr
    for size in (("0", "10"), ("10", "-3"), ("10", "99999999999999999999"), ("1.5", "2")):
        p = run(folder, "--colmap-db", tmp_path / "new.db", "--image-size", *size, rc=2)
        assert "is not an image side in pixels (a whole number from 1 to 1048576)" in p.stderr, p.stderr
        assert len(p.stderr) < 400, p.stderr


def test_a_name_that_is_not_utf8_is_refused_for_a_database(tmp_path, folder):
    d = tmp_path / "latin1"
    d.mkdir()
    for n in range(2):
        shutil.copy(folder / f"view_{n}.npy", d / f"view_{n}.npy")
        shutil.copy(folder / f"view_{n}.xy.npy", d / f"view_{n}.xy.npy")
    os.rename(os.fsencode(d / "view_1.npy"), os.fsencode(d) + b"/caf\xe9.npy")
    os.rename(os.fsencode(d / "view_1.xy.npy"), os.fsencode(d) + b"/caf\xe9.xy.npy")
    p = run(d, "--ratio", "0.8", "--colmap-db", tmp_path / "new.db", "--image-size", "512", "512", rc=1)
    assert "caf\\xe9" in p.stderr and "is not UTF-8" in p.stderr, p.stderr
    assert not (tmp_path / "new.db").exists()
