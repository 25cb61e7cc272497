"""Plots of a ``multireduce bench`` run, as PNG files.

Usage::

    multireduce bench --json run.json            # every suite (or: bench SUITE --json ...)
    python -m multireduce.plot run.json [cub_fixed.json ...] -o plots/ [--markdown tables.md]

Each input is the JSON record of one suite, of a run of every suite (``"suites"``), or of
``multireduce_bench_cub_fixed`` (CUB 3.1's fixed-size segmented overload). Every plot whose suite
is present is drawn; its title names the GPU and the date of the run:

==========================  ==========================================================
``harris.png``              Harris's kernels (Optimizing Parallel Reduction in CUDA,
                            2007, and Crovella's later versions): GB/s per kernel, the
                            read ceiling drawn in
``kepler.png``              Luitjens's kernels (Faster Parallel Reductions on Kepler,
                            2014), likewise
``hip_tutorial.png``        the HIP reduction tutorial's kernels, likewise
``shared_vs_warp.png``      the shared memory against warp shuffles post: 2^30
                            unsigned ints
``paper_figure2.png``       Parker & MacKinnon's Figure 2 (the multi-reduction paper):
                            speed-up over the butterfly against blocks/SM
``segmented.png``           segmented-sum GB/s against segment length: ours, CUB 3.0.1, CUB 3.1
``window_stats.png``        sliding windows and the eleven statistics against copy bandwidth
``matcher.png``             2-NN Hamming matching: comparisons per second against problem size
==========================  ==========================================================

Needs matplotlib (``pip install matplotlib``); nothing else of the package.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from typing import Any, Callable

__all__ = ["load_runs", "plot_all", "markdown_tables", "main"]

Record = dict[str, Any]


def load_runs(paths: list[str]) -> dict[str, Record]:
    """The suites' records in the given JSON files, by suite name (``cub_fixed`` for the CUB 3.1
    baseline's). Raises ValueError for a file that is not a bench record."""
    suites: dict[str, Record] = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                record = json.load(f)
        except OSError as e:
            raise ValueError(f"{path}: cannot read it ({e.strerror})") from None
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}: not JSON ({e.msg}, line {e.lineno})") from None
        if not isinstance(record, dict):
            raise ValueError(f"{path}: not a multireduce bench record (a JSON object)")
        if isinstance(record.get("suites"), dict):
            suites.update(record["suites"])
        elif "fixed_segmented_vs_cub_fixed_size" in record:
            suites["cub_fixed"] = record
        elif isinstance(record.get("suite"), str):
            suites[record["suite"]] = record
        else:
            raise ValueError(f"{path}: not a multireduce bench record (no 'suite' or 'suites')")
    return suites


def _title(text: str, record: Record) -> str:
    device = record.get("device", {})
    gpu = device.get("name", "unknown GPU")
    date = str(record.get("date_utc", ""))[:10]
    driver = device.get("cuda_driver_version")
    cuda = f", CUDA driver {driver // 1000}.{driver % 1000 // 10}" if isinstance(driver, int) else ""
    return f"{text}\n{gpu}{cuda}, {date}" if date else f"{text}\n{gpu}{cuda}"


def _size_label(n: int) -> str:
    exponent = int(round(math.log2(n))) if n > 0 else 0
    return f"2^{exponent}" if 1 << exponent == n else str(n)


def _unique(values) -> list:
    """The distinct values in first-seen order."""
    return list(dict.fromkeys(values))


def _ladder_rows(record: Record) -> tuple[list[Record], list[int], list[str]]:
    """A published-kernel suite's timed rows, their sizes (ascending) and kernels (in the table's
    order)."""
    rows = [r for r in record["rows"] if "gb_per_s" in r]
    return rows, sorted({r["n"] for r in rows}), _unique(r["kernel"] for r in rows)


def _ladder(plt, record: Record, text: str, path: str) -> None:
    """Horizontal bars: GB/s of each kernel at each size, the read ceiling of each size dashed."""
    rows, sizes, kernels = _ladder_rows(record)
    ceilings = {c["n"]: c["gb_per_s"] for c in record.get("read_ceiling", [])}
    height = 0.8 / len(sizes)
    fig, ax = plt.subplots(figsize=(11, 0.45 * len(kernels) * max(1, len(sizes) * 0.6) + 1.8))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for s, n in enumerate(sizes):
        values = {r["kernel"]: r["gb_per_s"] for r in rows if r["n"] == n}
        ys = [k + (s - (len(sizes) - 1) / 2) * height for k in range(len(kernels))]
        ax.barh(ys, [values.get(k, 0) for k in kernels], height=height, color=colors[s % len(colors)],
                label=f"{_size_label(n)} elements")
        if n in ceilings:
            ax.axvline(ceilings[n], color=colors[s % len(colors)], linestyle="--", linewidth=1)
    published = [(k, r["published_gb_per_s"]) for k, r in ((r["kernel"], r) for r in rows) if "published_gb_per_s" in r]
    if published:
        seen: dict[str, float] = dict(published)
        ax.scatter([seen[k] for k in kernels if k in seen], [kernels.index(k) for k in kernels if k in seen],
                   marker="x", color="black", zorder=3,
                   label=f"the document's figure ({record.get('published', {}).get('gpu', 'its GPU')})")
    ax.set_yticks(range(len(kernels)))
    ax.set_yticklabels(kernels)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (bytes read / median time); dashed: the read ceiling measured in the same run")
    ax.set_title(_title(text, record))
    ax.legend(loc="upper right", fontsize="small")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _paper_figure2(plt, record: Record, path: str) -> None:
    results = record["figure2"]["results"]
    types = [t for t in ("int", "float", "double") if any(r["type"] == t for r in results)]
    fig, axes = plt.subplots(1, len(types), figsize=(5 * len(types), 4.6), sharey=True, squeeze=False)
    for ax, t in zip(axes[0], types):
        kernels = _unique(r["kernel"] for r in results if r["type"] == t)
        for k in kernels:
            points = sorted((r["blocks_per_sm"], r["speedup_vs_butterfly"]) for r in results
                            if r["type"] == t and r["kernel"] == k and r["speedup_vs_butterfly"] is not None)
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=k)
        ax.set_xscale("log", base=2)
        ax.set_xticks([1, 2, 4, 8])
        ax.set_xticklabels(["1", "2", "4", "8"])
        ax.set_xlabel("blocks per SM")
        ax.set_title(t)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("speed-up over the butterfly (naive) kernel")
    axes[0][-1].legend(fontsize="small")
    fig.suptitle(_title("Parker & MacKinnon, Figure 2: sums of all 32-element windows", record))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _segmented(plt, record: Record, cub_fixed: Record | None, path: str) -> None:
    fixed = [r for r in record["segmented"] if str(r["segments"]).startswith("fixed L=")]
    lengths = [int(str(r["segments"]).split("=")[1]) for r in fixed]
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.plot(lengths, [r["ours_gb_per_s"] for r in fixed], marker="o", label="multireduce")
    ax.plot(lengths, [r["cub_gb_per_s"] for r in fixed], marker="s", label="CUB 3.0.1 (offsets)")
    if cub_fixed:
        rows = cub_fixed["fixed_segmented_vs_cub_fixed_size"]
        version = cub_fixed.get("cub_version")
        name = f"CUB {version // 100000}.{version // 100 % 1000}.{version % 100}" if isinstance(version, int) else "CUB 3.1"
        ax.plot([r["segment_length"] for r in rows], [r["cub_fixed_size_gb_per_s"] for r in rows], marker="^",
                label=f"{name} (fixed-size overload)")
    if "copy_gb_per_s" in record:
        ax.axhline(record["copy_gb_per_s"], color="gray", linestyle="--", label="device-to-device copy")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("segment length L (2^26 floats in 2^26 / L segments)")
    ax.set_ylabel("GB/s (input + output bytes / median time)")
    ax.set_title(_title("Segmented sums against segment length", record))
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _window_stats(plt, window: Record | None, stats: Record | None, path: str) -> None:
    labels: list[str] = []
    values: list[float] = []
    if window:
        for r in window["window"]:
            labels.append(f"window {r['op']}, W = {r['window']}")
            values.append(r["gb_per_s"])
    if stats:
        s = stats["stats"]
        labels.append("11 statistics in one pass")
        values.append(s["n"] * 4 / (s["stats_us"] * 1e-6) / 1e9)
        labels.append("one sum (multireduce)")
        values.append(s["n"] * 4 / (s["our_sum_us"] * 1e-6) / 1e9)
    record = window or stats or {}
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(labels) + 2))
    ax.barh(range(len(labels)), values, color="tab:blue")
    copy = (window or {}).get("copy_gb_per_s")
    if copy:
        ax.axvline(copy, color="gray", linestyle="--", label=f"device-to-device copy, {copy:.0f} GB/s")
        ax.legend(loc="lower right", fontsize="small")
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels)
    ax.invert_yaxis()
    ax.set_xlabel("GB/s (bytes read + written / median time), 2^28 floats")
    ax.set_title(_title("Sliding windows and statistics against copy bandwidth", record))
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _matcher(plt, record: Record, path: str) -> None:
    rows = record["matcher"]
    fig, ax = plt.subplots(figsize=(9, 5))
    for bits in sorted({r["bits"] for r in rows}):
        for kernel, marker in (("tensor_core", "o"), ("popcount", "s")):
            points = sorted((r["queries"], r["tera_comparisons_per_s"]) for r in rows
                            if r["bits"] == bits and r["kernel"] == kernel)
            if points:
                name = "tensor cores" if kernel == "tensor_core" else "popcount (CUDAK2NN-style)"
                ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, label=f"{name}, {bits}-bit")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("N (N queries against N training descriptors, k = 2)")
    ax.set_ylabel("T comparisons / s")
    ax.set_title(_title("Parker & MacKinnon, section 8: brute-force Hamming 2-NN", record))
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_all(suites: dict[str, Record], out_dir: str) -> list[str]:
    """Draws every plot whose suite is in `suites` into out_dir; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(out_dir, exist_ok=True)
    jobs: list[tuple[str, Callable[[str], None]]] = []
    ladders = {"harris": "Harris, Optimizing Parallel Reduction in CUDA (2007): the kernels, re-measured",
               "kepler": "Luitjens, Faster Parallel Reductions on Kepler (2014): shuffles and atomics, re-measured",
               "hip-tutorial": "The HIP reduction tutorial's kernels (32-lane warps), re-measured",
               "shared-vs-warp": "Shared memory against warp shuffles (a 2020 post), 2^30 unsigned ints"}
    for name, text in ladders.items():
        rows = suites.get(name, {}).get("rows")
        if isinstance(rows, list) and any(isinstance(r, dict) and "gb_per_s" in r for r in rows):
            jobs.append((name.replace("-", "_") + ".png", lambda p, n=name, t=text: _ladder(plt, suites[n], t, p)))
    if "paper" in suites and "figure2" in suites["paper"]:
        jobs.append(("paper_figure2.png", lambda p: _paper_figure2(plt, suites["paper"], p)))
    if "segmented" in suites:
        jobs.append(("segmented.png", lambda p: _segmented(plt, suites["segmented"], suites.get("cub_fixed"), p)))
    if "window" in suites or "stats" in suites:
        jobs.append(("window_stats.png", lambda p: _window_stats(plt, suites.get("window"), suites.get("stats"), p)))
    if "paper" in suites and suites["paper"].get("matcher"):
        jobs.append(("matcher.png", lambda p: _matcher(plt, suites["paper"], p)))
    written = []
    for file_name, draw in jobs:
        path = os.path.join(out_dir, file_name)
        try:
            draw(path)
        except (KeyError, TypeError, ValueError, ZeroDivisionError, AttributeError) as e:
            raise ValueError(f"{file_name}: the run's record lacks what this plot needs ({e!r})") from None
        written.append(path)
    return written


def _ladder_table(record: Record) -> str:
    rows, sizes, kernels = _ladder_rows(record)
    published = {r["kernel"]: r["published_gb_per_s"] for r in rows if "published_gb_per_s" in r}
    gpu = record.get("published", {}).get("gpu", "")
    head = ["kernel"] + ([f"the document ({gpu})"] if published else []) + [_size_label(n) for n in sizes]
    head.append(f"of ceiling at {_size_label(sizes[-1])}")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    by = {(r["kernel"], r["n"]): r for r in rows}
    for k in kernels:
        cells = [k] + ([f"{published[k]:.2f} GB/s" if k in published else "—"] if published else [])
        for n in sizes:
            r = by.get((k, n))
            cells.append(f"{r['us']:.2f} µs, {r['gb_per_s']:.0f} GB/s" if r else "—")
        last = by.get((k, sizes[-1]))
        cells.append(f"{100 * last['fraction_of_read_ceiling']:.1f}%" if last else "—")
        lines.append("| " + " | ".join(cells) + " |")
    ceilings = {c["n"]: c for c in record.get("read_ceiling", [])}
    cells = ["read ceiling"] + (["—"] if published else [])
    cells += [f"{ceilings[n]['us']:.2f} µs, {ceilings[n]['gb_per_s']:.0f} GB/s" if n in ceilings else "—" for n in sizes]
    lines.append("| " + " | ".join(cells + ["100%"]) + " |")
    return "\n".join(lines)


def markdown_tables(suites: dict[str, Record]) -> str:
    """The tables of a run as Markdown: each published-kernel suite's ladder (time and GB/s per
    size, the document's own figure, the fraction of the read ceiling), Figure 2 at 8 blocks per
    SM, and the matcher's throughput."""
    parts = []
    for name in ("harris", "kepler", "shared-vs-warp", "hip-tutorial"):
        record = suites.get(name)
        if record and any("gb_per_s" in r for r in record.get("rows", [])):
            parts.append(f"### {name}\n\n{_ladder_table(record)}")
    paper = suites.get("paper", {})
    results = paper.get("figure2", {}).get("results", [])
    if results:
        most = max(r["blocks_per_sm"] for r in results)
        types = [t for t in ("int", "float", "double") if any(r["type"] == t for r in results)]
        kernels = _unique(r["kernel"] for r in results)
        lines = [f"### Figure 2 at {most} blocks per SM (median ms, speed-up over the butterfly)", "",
                 "| kernel | " + " | ".join(types) + " |", "|---|" + "---|" * len(types)]
        for k in kernels:
            cells = []
            for t in types:
                r = next((r for r in results if r["kernel"] == k and r["type"] == t and r["blocks_per_sm"] == most), None)
                ok = r is not None and r.get("median_ms") is not None
                cells.append(f"{r['median_ms']:.4f} ms, {r['speedup_vs_butterfly']:.2f}×" if ok else "—")
            lines.append(f"| {k} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    matcher = paper.get("matcher", [])
    if matcher:
        sides = sorted({r["queries"] for r in matcher})
        combos = [(b, k) for b in sorted({r["bits"] for r in matcher}) for k in ("tensor_core", "popcount")]
        lines = ["### Matcher (T comparisons/s, k = 2, N × N)", "",
                 "| N | " + " | ".join(f"{b}-bit {k}" for b, k in combos) + " |", "|---|" + "---|" * len(combos)]
        for n in sides:
            cells = []
            for b, k in combos:
                r = next((r for r in matcher if r["queries"] == n and r["bits"] == b and r["kernel"] == k), None)
                cells.append(f"{r['tera_comparisons_per_s']:.3f}" if r else "—")
            lines.append(f"| {n} | " + " | ".join(cells) + " |")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m multireduce.plot",
                                     description="Plots of multireduce bench JSON records, as PNG files.")
    parser.add_argument("runs", nargs="+", help="JSON records of `multireduce bench` (and multireduce_bench_cub_fixed)")
    parser.add_argument("-o", "--output", required=True, help="the folder the PNG files go to (created)")
    parser.add_argument("--markdown", metavar="FILE", help="also write the run's tables as Markdown to FILE")
    args = parser.parse_args(argv)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("python -m multireduce.plot: needs matplotlib (pip install matplotlib)", file=sys.stderr)
        return 1
    try:
        suites = load_runs(args.runs)
        written = plot_all(suites, args.output)
    except (ValueError, OSError) as e:
        print(f"python -m multireduce.plot: error: {e}", file=sys.stderr)
        return 1
    if not written:
        print("python -m multireduce.plot: error: no suite in these records has a plot", file=sys.stderr)
        return 1
    for path in written:
        print(f"wrote {path}")
    if args.markdown:
        try:
            text = markdown_tables(suites)
            with open(args.markdown, "w", encoding="utf-8") as f:
                f.write(text)
        except (KeyError, TypeError, ValueError, OSError) as e:
            print(f"python -m multireduce.plot: error: --markdown: {e}", file=sys.stderr)
            return 1
        print(f"wrote {args.markdown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
