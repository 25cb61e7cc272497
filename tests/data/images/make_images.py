#!/usr/bin/env python3
"""Makes the sample images of tests/data/images: four views of one scene, as a camera would give
them (JPEG files), for `multireduce extract` and `mr.extract` (images in, descriptors out).

Run from the repository root (needs NumPy, OpenCV and scikit-image):

    .venv/bin/pip install opencv-python-headless scikit-image
    .venv/bin/python tests/data/images/make_images.py

view_0.jpg is scikit-image's astronaut (512 x 512, grey); view_1..3.jpg are the same image warped by
the homographies H[1..3] of tests/data/match/collection_homographies.npy (the views of the sample
collection), with cv2.warpPerspective, written with JPEG quality 92. H[n] maps a pixel (x, y, 1)
of view_0 to view n; pair (i, j) maps by H[j] @ inv(H[i]).
"""
import os

import cv2
import numpy as np
import skimage.data

HERE = os.path.dirname(os.path.abspath(__file__))
VIEWS = 4
SIZE = 512


def main():
    grey = cv2.cvtColor(skimage.data.astronaut(), cv2.COLOR_RGB2GRAY)
    assert grey.shape == (SIZE, SIZE)
    h = np.load(os.path.join(HERE, "..", "match", "collection_homographies.npy"))[:VIEWS]
    for n in range(VIEWS):
        view = grey if n == 0 else cv2.warpPerspective(grey, h[n], (SIZE, SIZE))
        cv2.imwrite(os.path.join(HERE, f"view_{n}.jpg"), view, [cv2.IMWRITE_JPEG_QUALITY, 92])


if __name__ == "__main__":
    main()
