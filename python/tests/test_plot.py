"""python -m multireduce.plot: every plot from a small synthetic run record (the shapes `multireduce
bench` writes), each file a PNG; bad inputs are errors with a message and exit status 1."""

import json

import pytest

pytest.importorskip("matplotlib")

from multireduce import plot  # noqa: E402

DEVICE = {"name": "Test GPU", "cuda_driver_version": 13000}


def ladder(name, kernels, sizes=(1 << 22, 1 << 25)):
    rows = [{"n": n, "kernel": k, "source": "test", "verified": True, "gb_per_s": 100.0 * (i + 1) * (s + 1),
             "us": 1.0, "fraction_of_read_ceiling": 0.5} for s, n in enumerate(sizes) for i, k in enumerate(kernels)]
    rows[0]["published_gb_per_s"] = 2.083
    return {"suite": name, "date_utc": "2026-11-24T00:00:00Z", "device": DEVICE, "rows": rows,
            "read_ceiling": [{"n": n, "us": 1.0, "gb_per_s": 5000.0} for n in sizes], "published": {"gpu": "G80"}}


def full_run():
    figure2 = {"results": [{"type": t, "kernel": k, "blocks_per_sm": b, "speedup_vs_butterfly": 1.0 + i * b / 10}
                           for t in ("int", "float", "double") for i, k in enumerate(("butterfly", "swap"))
                           for b in (1, 2, 4, 8)]}
    matcher = [{"queries": n, "train": n, "bits": bits, "kernel": k, "tera_comparisons_per_s": n / 1e5}
               for n in (1024, 4096) for bits in (256, 512) for k in ("tensor_core", "popcount")]
    segmented = [{"segments": f"fixed L={1 << e}", "ours_gb_per_s": 4000.0, "cub_gb_per_s": 10.0 * (e + 1)}
                 for e in range(4)] + [{"segments": "uniform 0..64", "ours_gb_per_s": 3000.0, "cub_gb_per_s": 100.0}]
    base = {"date_utc": "2026-11-24T00:00:00Z", "device": DEVICE}
    return {"suites": {
        "harris": ladder("harris", ["kernel 1", "kernel 7", "multireduce"]),
        "kepler": ladder("kepler", ["two-pass", "warp atomic"]),
        "hip-tutorial": ladder("hip-tutorial", ["v0", "v8"]),
        "shared-vs-warp": ladder("shared-vs-warp", ["shared", "warp"], sizes=(1 << 30,)),
        "paper": dict(base, suite="paper", figure2=figure2, matcher=matcher),
        "segmented": dict(base, suite="segmented", segmented=segmented, copy_gb_per_s=4200.0),
        "window": dict(base, suite="window", copy_gb_per_s=4200.0,
                       window=[{"op": "sum", "window": 3, "gb_per_s": 3800.0}]),
        "stats": dict(base, suite="stats", stats={"n": 1 << 28, "stats_us": 260.0, "our_sum_us": 237.0}),
    }}


def test_every_plot_is_drawn_as_a_png(tmp_path, capsys):
    run = tmp_path / "run.json"
    run.write_text(json.dumps(full_run()))
    cub_fixed = tmp_path / "cub_fixed.json"
    cub_fixed.write_text(json.dumps({"cub_version": 300102, "fixed_segmented_vs_cub_fixed_size": [
        {"segment_length": 1 << e, "cub_fixed_size_gb_per_s": 2500.0} for e in range(4)]}))
    out = tmp_path / "plots"
    assert plot.main([str(run), str(cub_fixed), "-o", str(out)]) == 0
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(["harris.png", "kepler.png", "hip_tutorial.png", "shared_vs_warp.png", "paper_figure2.png",
                            "segmented.png", "window_stats.png", "matcher.png"])
    for p in out.iterdir():
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
    assert capsys.readouterr().out.count("wrote ") == 8
    tables = tmp_path / "tables.md"
    assert plot.main([str(run), "-o", str(out), "--markdown", str(tables)]) == 0
    text = tables.read_text()
    for heading in ("### harris", "### kepler", "### shared-vs-warp", "### hip-tutorial", "Figure 2 at 8 blocks",
                    "### Matcher"):
        assert heading in text
    assert "| kernel 7 | — | 1.00 µs, 200 GB/s | 1.00 µs, 400 GB/s | 50.0% |" in text


def test_a_single_suite_record_gives_its_own_plot(tmp_path):
    run = tmp_path / "harris.json"
    run.write_text(json.dumps(ladder("harris", ["kernel 1"])))
    assert plot.main([str(run), "-o", str(tmp_path / "p")]) == 0
    assert [p.name for p in (tmp_path / "p").iterdir()] == ["harris.png"]


@pytest.mark.parametrize("content, message", [
    (None, "cannot read it"),
    ("{not json", "not JSON"),
    ("[1, 2]", "not a multireduce bench record"),
    ('{"rows": []}', "no 'suite' or 'suites'"),
    ('{"suite": "reduce", "reduce": []}', "no suite in these records has a plot"),
    ('{"suite": "harris", "rows": [{"n": 4}]}', "no suite in these records has a plot"),
    ('{"suite": "paper", "figure2": {}}', "lacks what this plot needs"),
])
def test_bad_records_are_errors_with_a_message(tmp_path, capsys, content, message):
    path = tmp_path / "run.json"
    if content is not None:
        path.write_text(content)
    assert plot.main([str(path), "-o", str(tmp_path / "out")]) == 1
    assert message in capsys.readouterr().err
