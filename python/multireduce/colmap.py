"""multireduce.colmap: a collection's matches for COLMAP (structure from motion), in pure Python
(sqlite3 and NumPy), the same rules as the tool's C++ writer (src/colmap, `multireduce match-all
DIR --colmap-db DB`). See docs/colmap.md.

    import multireduce as mr
    result = mr.match_all(descriptors, ratio=0.8)                 # one (N_i, 32) uint8 array per image
    mr.colmap.write_matches("project/database.db", names, result)  # then: colmap mapper ...

write_matches writes into an existing COLMAP database (images found by name; each pair's matches
replace that pair's old ones, whose verified geometry is dropped), in one transaction; or, given
image_size and keypoints, makes a new database with COLMAP 4.2.1's schema (a camera, rig and frame
per image, as COLMAP's feature extractor writes them) in a temporary file renamed into place. A
failure leaves the database as it was, or no file. write_matches_text writes what `colmap
matches_importer --match_type raw` reads; read_pair_list reads COLMAP's image pair list.
Errors: ValueError (inputs, names not in the database or not UTF-8, images without keypoints or with
keypoints that are not their descriptors' count, keypoint indices out of range, keypoints that are
not finite, not a COLMAP database), TypeError (dtypes), FileNotFoundError / FileExistsError /
IsADirectoryError (the database is not there / already there / a directory), PermissionError
(read-only), sqlite3.Error (locked, a full disk; the message names the database).
"""

from __future__ import annotations

import errno
import os
import re
import socket
import sqlite3
import urllib.request
from itertools import count
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ._colmap_schema import SCHEMA as _SCHEMA, SCHEMA_VERSION

__all__ = ["image_ids", "pair_id", "read_keypoints", "read_matches", "read_pair_list", "write_matches",
           "write_matches_text"]

#: COLMAP's largest image id + 1: pair_id = MAX_IMAGES * min(id1, id2) + max(id1, id2).
MAX_IMAGES = 2147483647
_SIMPLE_RADIAL, _CAMERA = 2, 0  # COLMAP's CameraModelId and SensorType
_WHITESPACE = re.compile(r"[ \t\r\n\v\f]+")
_temporaries = count()


def __dir__():
    """The module's own names (not the standard library's it imports)."""
    return sorted(__all__ + ["MAX_IMAGES", "SCHEMA_VERSION"])


def _host_tag() -> str:
    """This machine's name as temporaries carry it (other characters than letters, digits, . and _ as _)."""
    return re.sub(r"[^A-Za-z0-9._]", "_", socket.gethostname() or "host")


def _temporary(path: str) -> str:
    """A hidden temporary beside path: .NAME.tmp-HOST-PID-N, the tool's naming."""
    directory, base = os.path.split(path)
    return os.path.join(directory, f".{base}.tmp-{_host_tag()}-{os.getpid()}-{next(_temporaries)}")


def _remove_stale_temporaries(path: str) -> None:
    """Removes the temporaries of path that processes of this host which no longer run left behind
    (SIGTERM or SIGKILL while one was written), as the tool does."""
    directory, base = os.path.split(path)
    prefix = f".{base}.tmp-{_host_tag()}-"
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return
    for entry in entries:
        if not entry.startswith(prefix):
            continue
        rest = entry[len(prefix):]
        rest = rest[:-len("-journal")] if rest.endswith("-journal") else rest
        pid, _, n = rest.partition("-")
        if not (pid.isdigit() and n.isdigit()) or int(pid) == os.getpid() or int(pid) <= 0:
            continue
        try:
            os.kill(int(pid), 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except OSError:
            continue  # running, someone else's
        try:
            os.unlink(os.path.join(directory, entry))
        except OSError:
            pass


def _check_names_for_database(names: Sequence[str]) -> None:
    """COLMAP and pycolmap read a database's names as UTF-8: a name that is not (a file name of
    other bytes, decoded by Python with surrogates) is refused."""
    for name in names:
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            shown = name.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
            raise ValueError(f"the image name '{shown}' is not UTF-8: COLMAP and pycolmap read a database's names as "
                             "UTF-8 and could not read this one (rename the file)") from None


def _descriptor_counts(counts, names: Sequence[str]) -> Optional[List[int]]:
    """descriptor_counts as a list of ints (an array per image counts its rows), or None."""
    if counts is None:
        return None
    out = [int(c) if np.ndim(c) == 0 else int(np.shape(c)[0]) for c in counts]
    if len(out) != len(names):
        raise ValueError(f"{len(names)} images need as many descriptor counts, got {len(out)}")
    return out


def pair_id(id1: int, id2: int) -> int:
    """COLMAP's pair_id of two image ids: 2147483647 * min(id1, id2) + max(id1, id2)."""
    a, b = int(id1), int(id2)
    return MAX_IMAGES * min(a, b) + max(a, b)


def _host(x, name: str) -> np.ndarray:
    """A NumPy array of x: NumPy as is, CuPy by .get(), PyTorch by .cpu().numpy(), else np.asarray."""
    if hasattr(x, "get") and type(x).__module__.startswith("cupy"):
        x = x.get()
    elif hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.size and a.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, not {a.dtype}")
    return a.astype(np.int64, copy=False)


def _collection(names, result) -> Tuple[List[str], np.ndarray, np.ndarray, np.ndarray]:
    """names, pairs (P, 2), offsets (P + 1,), matches (M, >= 2) as int64, checked as the C++ side does."""
    names = [n if isinstance(n, str) else str(n) for n in names]
    pairs, offsets, matches = (_host(result.pairs, "pairs"), _host(result.offsets, "offsets").reshape(-1),
                               _host(result.matches, "matches"))
    pairs = pairs.reshape(0, 2) if pairs.size == 0 else pairs
    matches = matches.reshape(0, 3) if matches.size == 0 else matches
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must be (P, 2), not of shape {pairs.shape}")
    if matches.ndim != 2 or matches.shape[1] < 2:
        raise ValueError(f"matches must be (M, 3), not of shape {matches.shape}")
    p, n, m = len(pairs), len(names), len(matches)
    if len(offsets) != p + 1 and not (p == 0 and len(offsets) == 0):
        raise ValueError(f"{p} pairs need {p + 1} offsets, got {len(offsets)}")
    if p:
        a, b, begin, end = pairs[:, 0], pairs[:, 1], offsets[:-1], offsets[1:]
        checks = (((a < 0) | (b < 0) | (a >= n) | (b >= n), f"an image index out of range of the {n} names"),
                  (a >= b, "the first image must come before the second"),
                  ((begin < 0) | (begin > end) | (end > m), "its offsets [{}, {}) are not a range of the "
                   f"{m} matches"))
        first = min((int(np.argmax(bad)) for bad, _ in checks if bad.any()), default=-1)
        for bad, what in checks:
            if first >= 0 and bad[first]:
                raise ValueError(f"pair {first} ({a[first]}, {b[first]}): " + what.format(begin[first], end[first]))
        keys, repeats = np.unique(a * n + b, return_counts=True)
        if (repeats > 1).any():
            twice = int(keys[repeats > 1][0])
            raise ValueError(f"pair ({twice // n}, {twice % n}) is listed twice")
    if len(set(names)) != n:
        seen = set()
        twice = next(x for x in names if x in seen or seen.add(x))
        raise ValueError(f"the image name '{twice}' is given twice")
    return names, pairs, offsets, matches


def _connect(database, mode: str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions by hand) that never creates the file."""
    uri = "file:" + urllib.request.pathname2url(os.path.abspath(os.fspath(database))) + f"?mode={mode}"
    return sqlite3.connect(uri, uri=True, isolation_level=None, timeout=10.0)


def _require_colmap(db: sqlite3.Connection, database) -> bool:
    """ValueError unless COLMAP's tables are there; whether two_view_geometries is."""
    def columns(table: str) -> List[str]:
        return [r[0] for r in db.execute("SELECT name FROM pragma_table_info(?)", (table,))]
    try:
        for table, needed in (("images", ("image_id", "name", "camera_id")),
                              ("keypoints", ("image_id", "rows", "cols", "data")),
                              ("matches", ("pair_id", "rows", "cols", "data"))):
            have = columns(table)
            if not have:
                raise ValueError(f"{database}: not a COLMAP database: no table `{table}`")
            for column in needed:
                if column not in have:
                    raise ValueError(f"{database}: not a COLMAP database: table `{table}` has no column `{column}`")
        return "pair_id" in columns("two_view_geometries")
    except sqlite3.DatabaseError as e:
        raise ValueError(f"{database}: not a COLMAP database (not an SQLite file): {e}") from e


def _write_pairs(db, database, names, pairs, offsets, matches, ids, keypoint_rows, forget: bool) -> None:
    """Every pair's matches, keypoint indices checked (keypoint_rows -1: unknown), columns swapped
    where the first image has the larger id; the pair's geometry dropped when `forget`."""
    limits = np.asarray(keypoint_rows, np.int64)
    rows = []
    for p, (a, b) in enumerate(pairs):
        m = matches[offsets[p]:offsets[p + 1], :2]
        bad = (m < 0) | (m >= limits[[a, b]])
        if bad.any():
            r, side = map(int, np.argwhere(bad)[0])
            image, k = (a, b)[side], int(m[r, side])
            why = "is negative" if k < 0 else f"is out of range (it has {keypoint_rows[image]} keypoints)"
            raise ValueError(f"{database}: pair ({names[a]}, {names[b]}), match {r}: keypoint {k} of {names[image]} "
                             f"{why}")
        data = m[:, ::-1] if ids[a] > ids[b] else m
        rows.append((pair_id(ids[a], ids[b]), len(m), np.ascontiguousarray(data, dtype="<u4").tobytes()))
    db.executemany("INSERT OR REPLACE INTO matches(pair_id, rows, cols, data) VALUES(?, ?, 2, ?)", rows)
    if forget:
        db.executemany("DELETE FROM two_view_geometries WHERE pair_id = ?", [(r[0],) for r in rows])


def _keypoint_array(k, name: str) -> np.ndarray:
    a = np.asarray(k.get() if type(k).__module__.startswith("cupy") else
                   k.detach().cpu().numpy() if hasattr(k, "detach") else k)
    if a.dtype.kind not in "fiu":
        raise TypeError(f"the keypoints of {name} must be numbers, not {a.dtype}")
    if a.ndim != 2 or a.shape[1] < 2:
        raise ValueError(f"the keypoints of {name} must be (N, >= 2) (x, y first), not of shape {a.shape}")
    # COLMAP reads 2, 4 or 6 columns; of another width, x and y.
    k = np.ascontiguousarray(a if a.shape[1] in (2, 4, 6) else a[:, :2], dtype="<f4")
    bad = ~np.isfinite(k)
    if bad.any():
        r, c = map(int, np.argwhere(bad)[0])
        v = float(k[r, c])
        raise ValueError(f"the keypoints of {name}: keypoint {r} has {'NaN' if v != v else 'inf' if v > 0 else '-inf'} "
                         f"in column {c} (positions must be finite)")
    return k


def _create(db, names, image_size, keypoints) -> Tuple[List[int], List[int]]:
    """COLMAP's tables, then per image a SIMPLE_RADIAL camera, a rig, the image, a frame, its keypoints."""
    for statement in _SCHEMA.split(";"):
        if statement:
            db.execute(statement)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    w, h = image_size
    params = np.array([1.2 * max(w, h), w / 2, h / 2, 0], "<f8").tobytes()
    ids, rows = [], []
    for name, k in zip(names, keypoints):
        camera = db.execute("INSERT INTO cameras VALUES(NULL, ?, ?, ?, ?, 0)", (_SIMPLE_RADIAL, w, h, params)).lastrowid
        rig = db.execute("INSERT INTO rigs VALUES(NULL, ?, ?)", (camera, _CAMERA)).lastrowid
        image = db.execute("INSERT INTO images VALUES(NULL, ?, ?)", (name, camera)).lastrowid
        frame = db.execute("INSERT INTO frames VALUES(NULL, ?)", (rig,)).lastrowid
        db.execute("INSERT INTO frame_data VALUES(?, ?, ?, ?)", (frame, image, camera, _CAMERA))
        db.execute("INSERT INTO keypoints VALUES(?, ?, ?, ?)", (image, k.shape[0], k.shape[1], k.tobytes()))
        ids.append(image)
        rows.append(k.shape[0])
    return ids, rows


def write_matches(database, names: Sequence[str], result, *, image_size: Optional[Tuple[int, int]] = None,
                  keypoints: Optional[Sequence] = None, descriptor_counts: Optional[Sequence] = None) -> None:
    """Writes match_all's result (any object with .pairs (P, 2), .offsets (P + 1,), .matches (M, 3):
    NumPy, CuPy or PyTorch arrays) into a COLMAP database, `names[i]` being image i's name there.
    Without image_size: an existing database, images found by name, in one transaction; every image
    must have keypoints there that COLMAP can read. With image_size=(W, H) and keypoints (one
    (N, >= 2) array per image, x and y first, finite): a new database (`database` must not exist).
    descriptor_counts (one count, or the descriptor array itself, per image): each image's keypoints
    -- in the database or given -- must be exactly as many, so that the matches index the keypoints
    of the descriptors matched. Image ids follow `names` (1, 2, ...) in a new database."""
    names, pairs, offsets, matches = _collection(names, result)
    _check_names_for_database(names)
    counts = _descriptor_counts(descriptor_counts, names)
    if (image_size is None) != (keypoints is None):
        raise ValueError("a new database needs both image_size and keypoints; an existing one neither")
    path = os.fspath(database)
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, f"{path}: is a directory, not a COLMAP database")
    if image_size is None:
        _write_existing(path, names, pairs, offsets, matches, counts)
        return
    w, h = (int(v) for v in image_size)
    if w <= 0 or h <= 0:
        raise ValueError(f"a new database needs the image size, got {w} x {h}")
    if len(keypoints) != len(names):
        raise ValueError(f"a new database needs keypoints for each of the {len(names)} images, got {len(keypoints)}")
    arrays = [_keypoint_array(k, name) for k, name in zip(keypoints, names)]
    if counts is not None:
        for name, k, c in zip(names, arrays, counts):
            if k.shape[0] != c:
                raise ValueError(f"the image {name} has {k.shape[0]} keypoints and {c} descriptors: each descriptor "
                                 "needs its keypoint")
    if os.path.lexists(path):
        raise FileExistsError(f"{path}: already exists (a new database is never written over a file)")
    _remove_stale_temporaries(path)
    temporary = _temporary(path)
    try:
        os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
    except OSError as e:
        raise type(e)(e.errno, f"{path}: cannot create it: {e.strerror}") from None
    try:
        db = _connect(temporary, "rw")
        try:
            db.execute("PRAGMA journal_mode = MEMORY")  # nothing beside the file; COLMAP turns on WAL
            db.execute("PRAGMA foreign_keys = ON")
            db.execute("BEGIN IMMEDIATE")
            ids, rows = _create(db, names, (w, h), arrays)
            _write_pairs(db, path, names, pairs, offsets, matches, ids, rows, False)
            db.execute("COMMIT")
        finally:
            db.close()
        try:  # into place, never over a file that appeared meanwhile
            os.link(temporary, path)
        except FileExistsError as e:
            raise FileExistsError(f"{path}: a file of that name appeared meanwhile") from e
        except OSError:  # a file system without hard links
            if os.path.lexists(path):
                raise FileExistsError(f"{path}: a file of that name appeared meanwhile") from None
            os.rename(temporary, path)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def _write_existing(database, names, pairs, offsets, matches, counts) -> None:
    if not os.path.exists(database):
        raise FileNotFoundError(f"{database}: no such database (give image_size and keypoints to make one)")
    if not os.access(database, os.W_OK):
        raise PermissionError(f"{database}: not writable (read-only)")
    db = _connect(database, "rw")
    try:
        forget = _require_colmap(db, database)
        db.execute("BEGIN IMMEDIATE")
        try:
            by_name = dict(db.execute("SELECT name, image_id FROM images"))
            absent = [n for n in names if n not in by_name]
            if absent:
                listed = ", ".join(absent[:5]) + (", ..." if len(absent) > 5 else "")
                raise ValueError(f"{database}: {len(absent)} of the {len(names)} images are not in the database "
                                 f"({listed}); COLMAP names an image by its path relative to the image folder")
            ids = [by_name[n] for n in names]
            found = {i: (r, c, b) for i, r, c, b in
                     db.execute("SELECT image_id, rows, cols, ifnull(length(data), 0) FROM keypoints")}
            rows = []
            for n, (name, i) in enumerate(zip(names, ids)):
                if i not in found:
                    raise ValueError(f"{database}: the image {name} has no keypoints in the database: COLMAP would "
                                     "index keypoints that do not exist (run COLMAP's feature extractor, or make a "
                                     "new database with image_size and keypoints)")
                r, c, b = found[i]
                if r < 0 or c not in (2, 4, 6) or b != r * c * 4:
                    raise ValueError(f"{database}: the keypoints of {name} are not what COLMAP reads: rows {r}, cols "
                                     f"{c}, {b} bytes of data (rows >= 0, 2, 4 or 6 columns of float32)")
                if counts is not None and r != counts[n]:
                    raise ValueError(f"{database}: the image {name} has {r} keypoints in the database and {counts[n]} "
                                     "descriptors in the collection: the descriptors are not those of the database's "
                                     "keypoints, so the matches would index other keypoints")
                rows.append(r)
            _write_pairs(db, database, names, pairs, offsets, matches, ids, rows, forget)
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise
    except sqlite3.Error as e:
        raise type(e)(f"{database}: {e}") from e
    finally:
        db.close()


def _read(database, query: str):
    if not os.path.exists(database):
        raise FileNotFoundError(f"{database}: no such database")
    db = _connect(database, "ro")
    try:
        return db.execute(query).fetchall()
    finally:
        db.close()


def image_ids(database) -> Dict[str, int]:
    """{name: image_id} of a COLMAP database."""
    return dict(_read(database, "SELECT name, image_id FROM images"))


def read_keypoints(database) -> Dict[str, np.ndarray]:
    """{name: (N, cols) float32 keypoints} of the images that have keypoints."""
    rows = _read(database, "SELECT name, rows, cols, data FROM keypoints JOIN images USING (image_id)")
    return {name: np.frombuffer(data or b"", "<f4").reshape(r, c).copy() for name, r, c, data in rows}


def read_matches(database) -> Dict[Tuple[str, str], np.ndarray]:
    """{(name1, name2): (M, 2) uint32 keypoint indices} of every pair in the matches table, name1
    being the image with the smaller image_id (whose index is the first column)."""
    names = {i: n for n, i in image_ids(database).items()}
    out = {}
    for pid, r, c, data in _read(database, "SELECT pair_id, rows, cols, data FROM matches"):
        id1, id2 = divmod(pid, MAX_IMAGES)
        if id1 not in names or id2 not in names:
            raise ValueError(f"{database}: matches of pair_id {pid} name image {id1} or {id2}, not in `images`")
        out[(names[id1], names[id2])] = np.frombuffer(data or b"", "<u4").reshape(r, c).copy()
    return out


def write_matches_text(path, names: Sequence[str], result) -> None:
    """The text `colmap matches_importer --match_type raw` reads: per pair "name1 name2", one "i j"
    line per match, an empty line; written to a temporary file renamed over `path`."""
    names, pairs, offsets, matches = _collection(names, result)
    for name in names:
        if not name or _WHITESPACE.search(name):
            raise ValueError(f"the image name '{name}' {'is empty' if not name else 'holds whitespace'}: COLMAP's "
                             "text files cannot name it (it reads names up to a space)")
    path = os.fspath(path)
    _remove_stale_temporaries(path)
    temporary = _temporary(path)
    try:
        try:
            out = open(temporary, "w", encoding="utf-8", newline="\n")
        except OSError as e:
            raise type(e)(e.errno, f"{path}: cannot create it: {e.strerror}") from None
        with out:
            for p, (a, b) in enumerate(pairs):
                out.write(f"{names[a]} {names[b]}\n")
                m = matches[offsets[p]:offsets[p + 1], :2]
                out.write("".join(f"{i} {j}\n" for i, j in m.tolist()))
                out.write("\n")
        os.replace(temporary, path)
    finally:
        if os.path.lexists(temporary):
            os.unlink(temporary)


def read_pair_list(path, names: Sequence[str]) -> np.ndarray:
    """COLMAP's image pair list ("name1 name2" per line; blank lines and '#' lines skipped) as (P, 2)
    int32 indices into names, first < second, a pair listed twice kept at its first line. A line
    with an unknown image, other than two names, or an image with itself: ValueError "path:line: ..."."""
    index = {}
    for i, name in enumerate(names):
        if index.setdefault(str(name), i) != i:
            raise ValueError(f"the image name '{name}' is given twice")
    pairs, seen = [], set()
    with open(path, encoding="utf-8", newline="\n") as f:
        for number, line in enumerate(f, 1):
            words = _WHITESPACE.split(line.strip(" \t\r\n\v\f"))
            if words == [""] or words[0].startswith("#"):
                continue
            if len(words) != 2:
                raise ValueError(f"{path}:{number}: expected two image names, found {len(words)} words")
            for w in words:
                if w not in index:
                    raise ValueError(f"{path}:{number}: the image '{w}' is not in the collection")
            a, b = index[words[0]], index[words[1]]
            if a == b:
                raise ValueError(f"{path}:{number}: pairs the image '{words[0]}' with itself")
            pair = (min(a, b), max(a, b))
            if pair not in seen:
                seen.add(pair)
                pairs.append(pair)
    return np.array(pairs, np.int32).reshape(-1, 2)
