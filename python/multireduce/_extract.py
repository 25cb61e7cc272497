"""mr.extract: the binary descriptors of images and their keypoints, through OpenCV's Python package
(cv2: pip install opencv-python-headless), with the rules of the tool's `multireduce extract`: the
same images listed in the same order, the same OpenCV calls, the same folder written (NAME.npy and
NAME.xy.npy per image file NAME, all or nothing)."""

from __future__ import annotations

import os
import socket
from typing import List, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from ._calls import bounded

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".bmp", ".webp", ".pgm", ".ppm", ".pnm", ".jp2")
DESCRIPTORS = {"orb": 32, "brisk": 64}  # descriptor -> bytes per row


class ImageFeatures(NamedTuple):
    """One image's features: its file name, keypoints float32 (N, 2) as (x, y) in pixels,
    descriptors uint8 (N, bytes) in the keypoints' order, and size (width, height) in pixels."""

    name: str
    keypoints: np.ndarray
    descriptors: np.ndarray
    size: Tuple[int, int]


def _cv2():
    try:
        import cv2
    except ImportError:
        raise ModuleNotFoundError("mr.extract needs OpenCV's Python package: pip install opencv-python-headless "
                                  "(or use the tool: multireduce extract IMAGES FEATURES)") from None
    return cv2


def _brisk(cv2):
    """cv2's BRISK: in the main modules up to OpenCV 4, in the contrib modules (xfeatures2d) since 5."""
    create = getattr(cv2, "BRISK_create", None) or getattr(getattr(cv2, "xfeatures2d", None), "BRISK_create", None)
    if create is None:
        raise ModuleNotFoundError(f"descriptor='brisk' needs a cv2 with BRISK, and cv2 {cv2.__version__} has none "
                                  f"(OpenCV 5 moved it to the contrib modules: pip install "
                                  f"opencv-contrib-python-headless, or opencv-python-headless<5)")
    return create()


def image_files(images: Union[str, os.PathLike, Sequence]) -> List[str]:
    """The image files: those of a folder (by extension, case-insensitive; hidden files left out)
    sorted by name, as the tool lists them, or the paths given (their names must differ)."""
    if isinstance(images, (str, os.PathLike)):
        folder = os.fspath(images)
        if not os.path.isdir(folder):
            raise NotADirectoryError(f"{folder}: not a folder (extract takes a folder of images, or a list of files)")
        names = sorted(
            (n for n in os.listdir(folder)
             if not n.startswith(".") and n.lower().endswith(IMAGE_EXTENSIONS) and os.path.isfile(os.path.join(folder, n))),
            key=os.fsencode)
        if not names:
            raise ValueError(f"{folder}: no images in the folder (files named {', '.join(IMAGE_EXTENSIONS)})")
        return [os.path.join(folder, n) for n in names]
    if not hasattr(images, "__len__"):
        raise TypeError(f"images must be a folder or a list of image files, not {type(images).__name__}")
    paths = [os.fspath(p) for p in images]
    if not paths:
        raise ValueError("images is empty: give at least one image file")
    names = [os.path.basename(p) for p in paths]
    if len(set(names)) != len(names):
        raise ValueError("two of the images have the same file name: their feature files would collide")
    return paths


def _features_of(cv2, path: str, descriptor: str, max_features: int) -> ImageFeatures:
    grey = cv2.imread(path, cv2.IMREAD_GRAYSCALE)
    if grey is None or grey.size == 0:
        raise ValueError(f"{path}: not an image OpenCV can read (or an empty one)")
    if descriptor == "orb":
        keypoints, rows = cv2.ORB_create(nfeatures=max_features).detectAndCompute(grey, None)
    else:
        brisk = _brisk(cv2)
        found = sorted(brisk.detect(grey, None), key=lambda k: -k.response)[:max_features]  # (stable: ties in order)
        keypoints, rows = brisk.compute(grey, found)
    bytes_per_row = DESCRIPTORS[descriptor]
    xy = np.array([k.pt for k in keypoints], dtype=np.float32).reshape(-1, 2)
    rows = np.zeros((0, bytes_per_row), np.uint8) if rows is None else np.ascontiguousarray(rows, dtype=np.uint8)
    if rows.shape != (len(xy), bytes_per_row):
        raise ValueError(f"{path}: OpenCV gave descriptors of shape {rows.shape} for {len(xy)} keypoints")
    return ImageFeatures(os.path.basename(path), xy, rows, (int(grey.shape[1]), int(grey.shape[0])))


def extract(images, features: Optional[Union[str, os.PathLike]] = None, *, descriptor: str = "orb",
            max_features: int = 8192) -> List[ImageFeatures]:
    """The binary descriptors and keypoints of every image: `images` is a folder (its image files,
    sorted by name) or a list of image files. Each image is read as grey and given to OpenCV: ORB
    (descriptor="orb", 256 bits: cv2.ORB_create(nfeatures=max_features).detectAndCompute) or BRISK
    ("brisk", 512 bits: detect, the max_features strongest by response kept, ties in detection
    order, compute). Returns an ImageFeatures per image, in order.

    features: a folder to write them to as `multireduce match-all` reads a collection: NAME.npy
    (uint8, N x bytes) and NAME.xy.npy (float32, N x 2) per image file NAME (IMG_1.JPG ->
    IMG_1.JPG.npy). Made if missing; a .npy there that is not one of these images' files is a
    ValueError (match-all would read it as one more image). Every file is written to a temporary
    first and all are renamed at the end: a failure leaves the folder as it was.
    Needs cv2 (pip install opencv-python-headless); ModuleNotFoundError without it."""
    if descriptor not in DESCRIPTORS:
        raise ValueError(f"descriptor must be 'orb' or 'brisk', not {descriptor!r}")
    limit = bounded(max_features, "max_features", 1, 1 << 20)
    paths = image_files(images)
    if features is not None:
        _check_features_folder(os.fspath(features), paths)
    cv2 = _cv2()
    if descriptor == "brisk":
        _brisk(cv2)
    found = [_features_of(cv2, p, descriptor, limit) for p in paths]
    if features is not None:
        _write_folder(os.fspath(features), found)
    return found


def _check_features_folder(folder: str, paths: List[str]) -> None:
    if os.path.exists(folder) and not os.path.isdir(folder):
        raise NotADirectoryError(f"{folder}: exists and is not a folder (extract writes a folder of NAME.npy files)")
    if not os.path.exists(folder):
        parent = os.path.dirname(os.path.abspath(folder))
        if not os.path.isdir(parent):
            raise FileNotFoundError(f"{folder}: its folder {parent} does not exist")
        return
    ours = {os.path.basename(p) + suffix for p in paths for suffix in (".npy", ".xy.npy")}
    for n in sorted(os.listdir(folder)):
        if n.endswith(".npy") and not n.startswith(".") and n not in ours:
            raise ValueError(f"{os.path.join(folder, n)}: not a feature file of these images, and match-all would read "
                             f"it as one more image: write the features into a new or empty folder")


def _write_folder(folder: str, found: List[ImageFeatures]) -> None:
    """Every image's two files written to hidden temporaries (.NAME.tmp-HOST-PID-N, as the tool
    names them), then all renamed; on any failure, KeyboardInterrupt included, the temporaries
    are removed (and a folder made here)."""
    made = not os.path.exists(folder)
    if made:
        os.mkdir(folder)
    written = []  # (temporary, final)
    try:
        for n, f in enumerate(found):
            for file, array in ((f.name + ".npy", f.descriptors), (f.name + ".xy.npy", f.keypoints)):
                final = os.path.join(folder, file)
                temporary = os.path.join(folder, f".{file}.tmp-{socket.gethostname()}-{os.getpid()}-{len(written)}")
                written.append((temporary, final))
                with open(temporary, "wb") as out:
                    np.save(out, array)
                    out.flush()
                    os.fsync(out.fileno())
        for temporary, final in written:
            os.replace(temporary, final)
        written = []
    finally:
        for temporary, _ in written:
            try:
                os.remove(temporary)
            except FileNotFoundError:
                pass
        if written and made:
            try:
                os.rmdir(folder)
            except OSError:
                pass
