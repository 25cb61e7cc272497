#!/usr/bin/env python3
"""Makes the sample collection of tests/data/match (README.md there says what each file holds).

Run from the repository root (needs NumPy, OpenCV and scikit-image, in the repository's .venv):

    .venv/bin/pip install opencv-python-headless scikit-image
    .venv/bin/python tests/data/match/make_collection.py

It writes
  collection/view_N.npy       uint8 (N, 32): ORB descriptors of view N (cv2.ORB_create(nfeatures=1500))
  collection/view_N.xy.npy    float32 (N, 2): their keypoints (x, y) in pixels
  collection_homographies.npy float64 (8, 3, 3): H[n] maps a pixel (x, y, 1) of view_0 to view n
  collection_opencv.npz       OpenCV's matches of every pair i < j (names in sorted order):
      names (<U), pairs int32 (P, 2), offsets int64 (P + 1), matches int32 (M, 3) rows
      (query index in i, train index in j, distance): BFMatcher(NORM_HAMMING).knnMatch(i, j, k=2)
      and the ratio test m.distance < 0.8 n.distance (a query with one neighbour is kept), in
      query order; cross_pairs, cross_offsets, cross_matches: those matches (q, t) for which q is
      also t's nearest query (knnMatch(j, i, k=1); ties to the lowest index, as OpenCV breaks them)
and prints, for each pair, the matches kept and how many agree with the true homography.

View 0 is scikit-image's astronaut (512 x 512, grey); views 1..7 are random homographies of it
(rotation up to 30 degrees, scale 0.7..1.3, a shift of up to 40 px and a little perspective,
about the centre) from numpy.random.default_rng(SEED), warped with cv2.warpPerspective. ORB looks
only where a view has image content at least 15 px from the black outside (a mask), so that no
keypoint sits on the warped image's edge.
"""
import os

import cv2
import numpy as np
import skimage.data

SEED = 20261126
SIZE = 512
VIEWS = 8
RATIO = 0.8
AGREE_PX = 3.0  # a match agrees with the homography when it lands within this many pixels

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = os.path.join(HERE, "collection")


def random_homography(rng):
    """Perspective, then rotation and scale, then a shift, all about the image's centre."""
    c = SIZE / 2
    angle = np.deg2rad(rng.uniform(-30, 30))
    scale = rng.uniform(0.7, 1.3)
    shift = rng.uniform(-40, 40, size=2)
    perspective = rng.uniform(-3e-4, 3e-4, size=2)
    to_centre = np.array([[1, 0, -c], [0, 1, -c], [0, 0, 1]])
    bend = np.array([[1, 0, 0], [0, 1, 0], [perspective[0], perspective[1], 1]])
    cos, sin = scale * np.cos(angle), scale * np.sin(angle)
    turn = np.array([[cos, -sin, 0], [sin, cos, 0], [0, 0, 1]])
    back = np.array([[1, 0, c + shift[0]], [0, 1, c + shift[1]], [0, 0, 1]])
    h = back @ turn @ bend @ to_centre
    return h / h[2, 2]


def knn(matcher, query, train, k):
    """OpenCV's k nearest training rows of each query: a list of (train index, distance) lists."""
    return [[(m.trainIdx, int(m.distance)) for m in row] for row in matcher.knnMatch(query, train, k=k)]


def brute_force(query, train, k):
    """The same search by NumPy: stable sort, so equal distances keep the lower training index."""
    a = np.unpackbits(query, axis=1).astype(np.int32)
    b = np.unpackbits(train, axis=1).astype(np.int32)
    d = a @ (1 - b).T + (1 - a) @ b.T
    order = np.argsort(d, axis=1, kind="stable")[:, :k]
    return [[(int(t), int(d[q, t])) for t in order[q]] for q in range(len(query))]


def ratio_kept(neighbours):
    """(query, train, distance) of each query whose nearest passes the ratio test."""
    kept = []
    for q, row in enumerate(neighbours):
        if len(row) == 1 or (len(row) == 2 and row[0][1] < RATIO * row[1][1]):
            kept.append((q, row[0][0], row[0][1]))
    return kept


def agree(h_i, h_j, xy_i, xy_j, matches):
    """How many matches land within AGREE_PX of where H[j] inverse(H[i]) puts their query."""
    if len(matches) == 0:
        return 0
    m = np.asarray(matches)
    to = h_j @ np.linalg.inv(h_i)
    p = np.c_[xy_i[m[:, 0]].astype(np.float64), np.ones(len(m))] @ to.T
    d = p[:, :2] / p[:, 2:] - xy_j[m[:, 1]]
    return int(np.count_nonzero((d**2).sum(axis=1) <= AGREE_PX**2))


def main():
    print(f"seed {SEED}, OpenCV {cv2.__version__}")
    rng = np.random.default_rng(SEED)
    grey = cv2.cvtColor(skimage.data.astronaut(), cv2.COLOR_RGB2GRAY)
    assert grey.shape == (SIZE, SIZE)
    homographies = np.stack([np.eye(3)] + [random_homography(rng) for _ in range(VIEWS - 1)])

    os.makedirs(FOLDER, exist_ok=True)
    orb = cv2.ORB_create(nfeatures=1500)
    margin = cv2.getStructuringElement(cv2.MORPH_RECT, (31, 31))
    descriptors, keypoints = [], []
    for n, h in enumerate(homographies):
        view = cv2.warpPerspective(grey, h, (SIZE, SIZE))
        inside = cv2.warpPerspective(np.full_like(grey, 255), h, (SIZE, SIZE), flags=cv2.INTER_NEAREST)
        found, desc = orb.detectAndCompute(view, cv2.erode(inside, margin))
        desc = np.zeros((0, 32), np.uint8) if desc is None else desc
        xy = np.array([k.pt for k in found], dtype=np.float32).reshape(-1, 2)
        np.save(os.path.join(FOLDER, f"view_{n}.npy"), desc)
        np.save(os.path.join(FOLDER, f"view_{n}.xy.npy"), xy)
        descriptors.append(desc)
        keypoints.append(xy)
    np.save(os.path.join(HERE, "collection_homographies.npy"), homographies)

    names = sorted(f"view_{n}" for n in range(VIEWS))  # the matcher's order: file names sorted
    index = [int(name.split("_")[1]) for name in names]
    matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
    pairs, matches, cross = [], [], []
    ties_differ = 0
    print("pair  queries  kept  agree   cross  agree")
    for a in range(VIEWS):
        for b in range(a + 1, VIEWS):
            i, j = index[a], index[b]
            forward = knn(matcher, descriptors[i], descriptors[j], 2)
            backward = knn(matcher, descriptors[j], descriptors[i], 1)
            # OpenCV's lists, ties included, are NumPy's stable brute force.
            ties_differ += forward != brute_force(descriptors[i], descriptors[j], 2)
            ties_differ += backward != brute_force(descriptors[j], descriptors[i], 1)
            kept = ratio_kept(forward)
            crossed = [m for m in kept if backward[m[1]][0][0] == m[0]]
            pairs.append((a, b))
            matches.append(kept)
            cross.append(crossed)
            h_i, h_j, xy_i, xy_j = homographies[i], homographies[j], keypoints[i], keypoints[j]
            print(f"{a},{b}  {len(descriptors[i]):7d}  {len(kept):4d}  {agree(h_i, h_j, xy_i, xy_j, kept):5d}"
                  f"  {len(crossed):6d}  {agree(h_i, h_j, xy_i, xy_j, crossed):5d}")
    assert ties_differ == 0, f"{ties_differ} pair searches where OpenCV's order is not the lowest index first"

    def packed(per_pair):
        offsets = np.cumsum([0] + [len(m) for m in per_pair]).astype(np.int64)
        rows = np.array([row for m in per_pair for row in m], dtype=np.int32).reshape(-1, 3)
        return offsets, rows

    offsets, rows = packed(matches)
    cross_offsets, cross_rows = packed(cross)
    np.savez(os.path.join(HERE, "collection_opencv.npz"), names=np.array(names), pairs=np.array(pairs, np.int32),
             offsets=offsets, matches=rows, cross_pairs=np.array(pairs, np.int32), cross_offsets=cross_offsets,
             cross_matches=cross_rows)

    for title, per_pair in (("ratio test", matches), ("ratio test + cross-check", cross)):
        counts = np.array([len(m) for m in per_pair])
        agreeing = sum(agree(homographies[index[a]], homographies[index[b]], keypoints[index[a]],
                             keypoints[index[b]], m) for (a, b), m in zip(pairs, per_pair))
        print(f"{title}: {counts.sum()} matches kept in {len(pairs)} pairs (per pair {counts.min()} to {counts.max()},"
              f" median {np.median(counts):g}); {agreeing} of them ({100 * agreeing / counts.sum():.1f}%) agree with"
              f" the homographies (within {AGREE_PX:g} px)")
    print(f"descriptors per view: {[len(d) for d in descriptors]}")


if __name__ == "__main__":
    main()
