#!/usr/bin/env python3
"""Writes the small matcher fixtures of tests/data/match/small and their expected k-NN results in
tests/cli/expected (plain Python, no NumPy: .npy version 1.0 written by hand). Deterministic."""
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = os.path.join(HERE, "small")
EXPECTED = os.path.join(HERE, "..", "..", "cli", "expected")


def write_npy(path, descr, shape, payload):
    shape_text = "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape_text)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * (pad % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1") + payload)


def rows(n, width, rng):
    return [bytes(rng.randrange(256) for _ in range(width)) for _ in range(n)]


def hamming(a, b):
    return sum(bin(x ^ y).count("1") for x, y in zip(a, b))


def knn(query, train, k):
    idx, dist = [], []
    for q in query:
        order = sorted((hamming(q, t), i) for i, t in enumerate(train))[:k]
        order += [(-1, -1)] * (k - len(order))
        idx.append([i for _, i in order])
        dist.append([d for d, _ in order])
    return idx, dist


def main():
    os.makedirs(SMALL, exist_ok=True)
    rng = random.Random(20261121)
    sets = {"query_5x32": rows(5, 32, rng), "train_1x32": rows(1, 32, rng), "train_0x32": [], "query_0x32": [],
            "train_40x32": rows(40, 32, rng)}
    for name, data in sets.items():
        write_npy(os.path.join(SMALL, name + ".npy"), "|u1", (len(data), 32), b"".join(data))
    for train, k in (("train_1x32", 3), ("train_0x32", 2), ("train_40x32", 8)):
        idx, dist = knn(sets["query_5x32"], sets[train], k)
        for what, table in (("idx", idx), ("dist", dist)):
            payload = b"".join(struct.pack("<%di" % k, *r) for r in table)
            write_npy(os.path.join(EXPECTED, "match_query_5x32_%s_k%d_%s.npy" % (train, k, what)), "<i4", (5, k), payload)


if __name__ == "__main__":
    main()
