"""What test_colmap.py builds its cases from: match_all-like results, random collections, synthetic
scenes whose keypoints really match (a homography, a 3D scene seen by several cameras), databases
made without multireduce (an older COLMAP's tables by SQLite, a new one by pycolmap's API), and a
dump of a database's schema and rows to compare two databases."""

import sqlite3
import types
from contextlib import closing

import numpy as np

W, H = 640, 480  # every image's size
F = 1.2 * max(W, H)  # COLMAP's default prior focal length: the cameras of the scenes use it


def result(pairs, rows_per_pair):
    """A match_all-like result: pairs (P, 2) int32, offsets (P + 1,) int64, matches (M, 3) int32
    (distance 7) from each pair's (i, j) rows."""
    offsets = np.zeros(len(pairs) + 1, np.int64)
    offsets[1:] = np.cumsum([len(r) for r in rows_per_pair])
    matches = [(i, j, 7) for rows in rows_per_pair for i, j in rows]
    return types.SimpleNamespace(pairs=np.array(pairs, np.int32).reshape(-1, 2), offsets=offsets,
                                 matches=np.array(matches, np.int32).reshape(-1, 3))


def random_collection(rng, images):
    """names, a result over a random half of the pairs (random keypoint indices), and (N_i, 2)
    float32 keypoints; image 0 has none."""
    names = [f"dir/IMG_{1000 + i}.JPG" for i in range(images)]
    keypoints = [rng.uniform(0, [W, H], (0 if i == 0 else int(rng.integers(1, 60)), 2)).astype(np.float32)
                 for i in range(images)]
    pairs, rows = [], []
    for a in range(images):
        for b in range(a + 1, images):
            if rng.random() < 0.5:
                continue
            count = 0 if a == 0 else int(rng.integers(0, 40))
            pairs.append((a, b))
            rows.append(list(zip(rng.integers(0, max(len(keypoints[a]), 1), count).tolist(),
                                 rng.integers(0, len(keypoints[b]), count).tolist())))
    return names, result(pairs, rows), keypoints


def homography_pair(rng, n=200, outliers=20):
    """Two images related by a homography: names, result (the first `outliers` matches wrong),
    keypoints (image 1's in another order), and the set of true (i, j) matches."""
    xy0 = rng.uniform([0, 0], [W, H], (n, 2))
    h = np.array([[0.9, 0.05, 20], [-0.04, 1.1, -10], [1e-4, 5e-5, 1]])
    p = np.c_[xy0, np.ones(n)] @ h.T
    perm = rng.permutation(n)  # point k is keypoint perm[k] of image 1
    xy1 = np.empty((n, 2))
    xy1[perm] = p[:, :2] / p[:, 2:]
    rows = np.stack([np.arange(n), perm], 1)
    rows[:outliers, 1] = (rows[:outliers, 1] + 1 + rng.integers(0, n - 1, outliers)) % n
    return (["a.png", "b.png"], result([(0, 1)], [rows.tolist()]),
            [xy0.astype(np.float32), xy1.astype(np.float32)], {tuple(r) for r in rows[outliers:].tolist()})


def scene(rng, images, points, point_order=False):
    """A 3D scene seen by `images` cameras on a line (COLMAP's default focal length, 0.3 px noise):
    names, a result of every pair (300 of the points each, or all), and per image its keypoints
    (the points' projections in an order of its own, or in the points' order)."""
    x = rng.uniform([-2, -2, 6], [2, 2, 10], (points, 3))
    keypoints, inverse = [], []
    for i in range(images):
        centre = np.array([-2.0 + i, 0.3 * np.sin(i), 0.0])
        z = np.array([0, 0, 8.0]) - centre
        z /= np.linalg.norm(z)
        axis_x = np.cross([0, 1, 0], z)
        axis_x /= np.linalg.norm(axis_x)
        rotation = np.stack([axis_x, np.cross(z, axis_x), z])
        camera = (x - centre) @ rotation.T
        xy = F * camera[:, :2] / camera[:, 2:] + [W / 2, H / 2] + rng.normal(0, 0.3, (points, 2))
        order = np.arange(points) if point_order else rng.permutation(points)  # keypoint k is point order[k]
        keypoints.append(xy[order].astype(np.float32))
        inverse.append(np.argsort(order))
    pairs, rows = [], []
    for a in range(images):
        for b in range(a + 1, images):
            seen = rng.permutation(points)[:min(points, 300)]
            pairs.append((a, b))
            rows.append(np.stack([inverse[a][seen], inverse[b][seen]], 1).tolist())
    return [f"img{i}.png" for i in range(images)], result(pairs, rows), keypoints


def colmap3_database(path, names, keypoint_rows):
    """A database as an older COLMAP (3.x) left it, made with SQLite alone: images in the order
    given (ids 1, 2, ...) and their keypoints (zeros)."""
    with closing(sqlite3.connect(path)) as db, db:
        db.executescript(
            "CREATE TABLE cameras (camera_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, model INTEGER NOT NULL,"
            " width INTEGER NOT NULL, height INTEGER NOT NULL, params BLOB, prior_focal_length INTEGER NOT NULL);"
            "CREATE TABLE images (image_id INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL, name TEXT NOT NULL UNIQUE,"
            " camera_id INTEGER NOT NULL, prior_qw REAL, prior_qx REAL, prior_qy REAL, prior_qz REAL);"
            "CREATE TABLE keypoints (image_id INTEGER PRIMARY KEY NOT NULL, rows INTEGER NOT NULL,"
            " cols INTEGER NOT NULL, data BLOB);"
            "CREATE TABLE matches (pair_id INTEGER PRIMARY KEY NOT NULL, rows INTEGER NOT NULL,"
            " cols INTEGER NOT NULL, data BLOB);"
            "CREATE TABLE two_view_geometries (pair_id INTEGER PRIMARY KEY NOT NULL, rows INTEGER NOT NULL,"
            " cols INTEGER NOT NULL, data BLOB, config INTEGER NOT NULL, F BLOB, E BLOB, H BLOB, qvec BLOB, tvec BLOB);"
            "INSERT INTO cameras VALUES (1, 0, 100, 100, NULL, 0);")
        for i, (name, rows) in enumerate(zip(names, keypoint_rows), 1):
            db.execute("INSERT INTO images(image_id, name, camera_id) VALUES (?, ?, 1)", (i, name))
            db.execute("INSERT INTO keypoints VALUES (?, ?, 2, zeroblob(?))", (i, rows, 8 * rows))
    return path


def pycolmap_reference(pycolmap, path, images=3):
    """A database made with pycolmap's API as COLMAP's feature extractor fills one: per image a
    SIMPLE_RADIAL camera (default focal length), a rig with it as reference sensor, the image, a
    frame holding it, and keypoints."""
    db = pycolmap.Database.open(str(path))
    try:
        for i in range(images):
            camera = pycolmap.Camera.create_from_model_id(2**32 - 1, pycolmap.CameraModelId.SIMPLE_RADIAL, F, W, H)
            camera.camera_id = db.write_camera(camera)
            rig = pycolmap.Rig()
            rig.add_ref_sensor(camera.sensor_id)
            rig.rig_id = db.write_rig(rig)
            image = pycolmap.Image(name=f"im{i}.jpg", camera_id=camera.camera_id)
            image.image_id = db.write_image(image)
            frame = pycolmap.Frame()
            frame.rig_id = rig.rig_id
            frame.add_data_id(image.data_id)
            db.write_frame(frame)
            db.write_keypoints(image.image_id, np.arange(10 * (i + 1), dtype=np.float32).reshape(-1, 2))
    finally:
        db.close()
    return path


def names_of(path):
    """A database's image names in image_id order."""
    with closing(sqlite3.connect(path)) as db:
        return [n for (n,) in db.execute("SELECT name FROM images ORDER BY image_id")]


def dump(path, schema_only=False):
    """{what: rows} of a database: sqlite_master, user_version and (unless schema_only) every
    table but matches and two_view_geometries."""
    with closing(sqlite3.connect(path)) as db:
        out = {"schema": db.execute("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY rowid").fetchall(),
               "user_version": db.execute("PRAGMA user_version").fetchone()}
        if not schema_only:
            for table in ("cameras", "rigs", "rig_sensors", "frames", "frame_data", "images", "keypoints",
                          "descriptors", "pose_priors", "sqlite_sequence"):
                out[table] = db.execute(f"SELECT * FROM {table}").fetchall()
    return out
