"""`suite merge`: hand-made raw CSVs (two builds, two GPUs, three modes, every failure status)
whose tables are checked cell by cell; plots render; bad input gives one line and exit 2."""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import pytest
from support.rows import A100, ROWS, T4, At, Speedup, Times, compiled, eager, row, write_one_csv, write_run

from suite.cli import main
from suite.report.load import load
from suite.report.reference import REFERENCE_DIR, Reference
from suite.report.study import Study, build_kinds
from suite.report.tables.compile_vs_eager import compile_groups, compile_vs_eager
from suite.report.tables.modes import compile_modes
from suite.report.tables.stable_vs import stable_vs_others
from suite.report.tables.summary import summary_table
from suite.results import COLUMNS, RowWriter

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_run(tmp_path / "run", ROWS)


@pytest.fixture
def study(run: Path) -> Study:
    loaded = load([run])
    kinds, _ = build_kinds(["stable", "nightly"], ROOT / "matrix.yaml", explicit=True)
    return Study(loaded.frame, kinds)


def tables_by_title(study: Study):
    ref = Reference.load(REFERENCE_DIR)
    return {t.title: t for t in (compile_vs_eager(study, g, ref) for g in compile_groups(study))}


def test_compile_vs_eager_a100_stable_batch_1(study: Study):
    t = tables_by_title(study)[f"{A100} · stable (torch 2.0.1+cu118) · batch size 1 · mode default"]
    assert [c.md for c in t.columns if c.markdown] == [
        "Task/Model",
        "no compile (ms)",
        "compile (ms)",
        "speed-up",
        "mean, no compile (ms)",
        "mean, compile (ms)",
        "guide: A100 (batch size: 1)",
    ]
    # durations: the compiled cell's paired medians (7.9 x 1.25 = 9.875 and 7.9), whose ratio is the
    # speed-up beside them; then each cell's mean (the guide's statistic) beside the guide's figure
    assert t.markdown_rows() == [
        # guide: 9.325 -> 7.584 ms and 34.619 -> 19.040 ms
        [
            "Image Classification/ViT",
            "9.875",
            "7.900",
            "20.0% · 1.25x [1.20, 1.30]",
            "10.000",
            "8.000",
            "18.7% · 1.23x",
        ],
        [
            "Object Detection/DETR",
            "39.000",
            "19.500 †",
            "50.0% · 2.00x [1.90, 2.10] †",
            "40.000",
            "20.000 †",
            "45.0% · 1.82x",
        ],
    ]
    assert "† compiled output differs from eager" in t.markdown()
    assert "mean, no compile / compile: each cell's own mean" in t.markdown()


def test_compile_vs_eager_failures_print_their_status(study: Study):
    tables = tables_by_title(study)
    oom = tables[f"{A100} · stable (torch 2.0.1+cu118) · batch size 16 · mode default"]
    assert oom.markdown_rows() == [
        ["Object Detection/DETR", "OOM", "OOM", "OOM", "OOM", "OOM", "1.5% · 1.02x"]
    ]
    ro = tables[f"{A100} · stable (torch 2.0.1+cu118) · batch size 1 · mode reduce-overhead"]
    assert [c.md for c in ro.columns if c.markdown][
        -1
    ] == "speed-up"  # the guide ran reduce-overhead on nightly only
    assert ro.markdown_rows() == [
        ["Image Classification/ViT", "9.440", "5.900", "37.5% · 1.60x [1.50, 1.70]"],
        # no pair: the eager cell's own median, marked
        ["Object Detection/DETR", "39.000 ‡", "error", "error"],
    ]
    assert "‡ no paired eager median" in ro.markdown()
    nightly = tables[f"{A100} · nightly (torch 2.1.0.dev20230605+cu118) · batch size 1 · mode default"]
    assert nightly.columns[-1].md == "guide: PyTorch Nightly: A100"
    assert nightly.markdown_rows() == [
        [
            "Image Classification/ViT",
            "8.800",
            "11.000",
            "-25.0% · 0.80x [0.75, 0.85]",
            "9.000",
            "11.000",
            "—",
        ],
        # the eager cell timed out, but the compiled cell's own eager calls were timed
        [
            "Object Detection/DETR",
            "26.250",
            "17.500",
            "33.3% · 1.50x [1.40, 1.60]",
            "timeout",
            "18.000",
            "50.1% · 2.00x",
        ],
    ]
    t4 = tables[f"{T4} · stable (torch 2.0.1+cu118) · batch size 1 · mode default"]
    assert t4.columns[-1].md == "guide: T4 (batch size: 1)"
    assert t4.markdown_rows() == [
        ["Image Classification/ViT", "15.900 ‡", "OOM", "OOM", "16.000", "OOM", "4.4% · 1.05x"],
        ["Object Detection/DETR", "skipped", "—", "—", "skipped", "—", "26.1% · 1.35x"],
    ]


def test_compile_vs_eager_csv_keeps_numbers_and_failure_words(study: Study):
    t = tables_by_title(study)[f"{A100} · stable (torch 2.0.1+cu118) · batch size 16 · mode default"]
    frame = t.frame()
    assert frame.loc[0, "without torch.compile"] == "OOM"
    assert frame.loc[0, "with torch.compile"] == "OOM"
    assert frame.loc[0, "speed-up"] == "OOM"
    assert frame.loc[0, "guide without torch.compile"] == 164.382
    t = tables_by_title(study)[f"{A100} · stable (torch 2.0.1+cu118) · batch size 1 · mode default"]
    first = t.frame().iloc[0].to_dict()
    assert {k: first[k] for k in ("task", "model", "GPU", "batch size", "build", "mode")} == {
        "task": "Image Classification",
        "model": "ViT",
        "GPU": A100,
        "batch size": 1,
        "build": "stable",
        "mode": "default",
    }
    assert (first["without torch.compile"], first["with torch.compile"]) == (9.875, 7.9)  # the pair
    assert (first["eager cell mean (ms)"], first["compiled cell mean (ms)"]) == (10.0, 8.0)  # the guide's
    assert (first["speed-up"], first["CI low"], first["CI high"], first["improvement %"]) == (
        1.25,
        1.2,
        1.3,
        20.0,
    )


def test_stable_vs_nightly(study: Study):
    tables = stable_vs_others(study)
    assert [t.title for t in tables] == [
        f"{A100} · stable (torch 2.0.1+cu118) vs nightly (torch 2.1.0.dev20230605+cu118) · mode default"
    ]
    t = tables[0]
    assert [c.md for c in t.columns] == [
        "Task/Model",
        "Batch Size",
        "stable no compile (ms)",
        "stable compile (ms)",
        "nightly no compile (ms)",
        "nightly compile (ms)",
        "stable speed-up",
        "nightly speed-up",
        "nightly vs stable, no compile",
        "nightly vs stable, compile",
        "nightly vs stable: rule",  # separate here: the builds were not timed side by side
        "speed-up nightly / stable",
        "eager side (nightly / stable eager)",
        "compiled side (stable / nightly compiled)",
        "moved",
    ]
    assert t.markdown_rows() == [
        # no compile: the paired eager medians, 9.875 / 8.8 = 1.122 in [9.775 / 8.9, 9.975 / 8.7];
        # compile: 7.9 / 11.0 = 0.718 in [7.8 / 11.1, 8.0 / 10.9]; what moved: 0.80 / 1.25 = 0.64
        # in [0.75 / 1.30, 0.85 / 1.20] = eager side 8.8 / 9.875 = 0.89 in [8.7 / 9.975, 8.9 / 9.775]
        # x compiled side 7.9 / 11.0 = 0.72 in [7.8 / 11.1, 8.0 / 10.9]: both moved
        [
            "Image Classification/ViT",
            "1",
            "9.875",
            "7.900",
            "8.800",
            "11.000",
            "20.0% · 1.25x [1.20, 1.30]",
            "-25.0% · 0.80x [0.75, 0.85]",
            "10.9% · 1.12x [1.10, 1.15]",
            "-39.2% · 0.72x [0.70, 0.73]",
            "separate",
            "0.64x [0.58, 0.71]",
            "0.89x [0.87, 0.91]",
            "0.72x [0.70, 0.73]",
            "both: eager faster, compiled slower",
        ],
        [
            "Object Detection/DETR",
            "1",
            "39.000",
            "19.500 †",
            "26.250",
            "17.500",
            "50.0% · 2.00x [1.90, 2.10] †",
            "33.3% · 1.50x [1.40, 1.60]",
            "32.7% · 1.49x [1.48, 1.50]",
            "10.3% · 1.11x [1.06, 1.18]",
            "separate",
            # 1.50 / 2.00 = eager side 26.25 / 39.0 x compiled side 19.5 / 17.5
            "0.75x [0.67, 0.84]",
            "0.67x [0.67, 0.68]",
            "1.11x [1.06, 1.18]",
            "both: eager faster, compiled faster",
        ],
        [
            "Object Detection/DETR",
            "16",
            "OOM",
            "OOM",
            "—",
            "—",
            "OOM",
            "—",
            "OOM",
            "OOM",
            "separate",
            *["OOM"] * 4,
        ],
    ]


def test_compile_modes(study: Study):
    tables = compile_modes(study)
    assert [t.title for t in tables] == [
        f"{A100} · stable (torch 2.0.1+cu118) · modes default, reduce-overhead"
    ]
    t = tables[0]
    # each mode: its own cell's paired eager and compiled medians, and their ratio
    assert [c.md for c in t.columns] == [
        "Task/Model",
        "Batch Size",
        "default: no compile (ms)",
        "default: compile (ms)",
        "default speed-up",
        "reduce-overhead: no compile (ms)",
        "reduce-overhead: compile (ms)",
        "reduce-overhead speed-up",
    ]
    assert t.markdown_rows() == [
        [
            "Image Classification/ViT",
            "1",
            "9.875",
            "7.900",
            "20.0% · 1.25x [1.20, 1.30]",
            "9.440",
            "5.900",
            "37.5% · 1.60x [1.50, 1.70]",
        ],
        [
            "Object Detection/DETR",
            "1",
            "39.000",
            "19.500 †",
            "50.0% · 2.00x [1.90, 2.10] †",
            "39.000 ‡",
            "error",
            "error",
        ],
        ["Object Detection/DETR", "16", "OOM", "OOM", "OOM", "OOM", "—", "—"],
    ]


def test_summary_geomeans_and_pass_rate(study: Study):
    rows = {(r[0], r[1], r[2], r[3]): r[5:9] for r in summary_table(study).markdown_rows()}
    # stable default on A100, batch 1: sqrt(1.25 * 2.0) = 1.581, one accuracy failure
    assert rows["stable", "default", A100, "1"] == ["2/2 (100%)", "1", "1.581x (n=2)", "1.581x (n=2)"]
    assert rows["stable", "reduce-overhead", A100, "1"] == ["1/2 (50%)", "0", "1.600x (n=1)", "1.600x (n=1)"]
    assert rows["stable", "default", A100, "16"] == ["0/1 (0%)", "0", "—", "—"]
    # nightly: sqrt(0.8 * 1.5) = 1.095 unclipped, sqrt(1.0 * 1.5) = 1.225 clipped at 1x
    assert rows["nightly", "default", A100, "1"] == ["2/2 (100%)", "0", "1.095x (n=2)", "1.225x (n=2)"]
    assert rows["nightly", "eager", A100, "1"] == ["1/2 (50%)", "—", "—", "—"]
    assert rows["stable", "eager", T4, "1"] == ["1/2 (50%)", "—", "—", "—"]
    assert next(iter(rows))[0] == "stable"  # the stable build is listed first


def test_merge_cli_writes_tables_plots_and_index(run: Path, capsys):
    assert main(["merge", str(run)]) == 0
    tables, plots = run / "tables", run / "plots"
    index = (tables / "tables.md").read_text()
    for heading in ("## Summary", "## Compile vs eager", "## Stable vs nightly", "## Compile modes"):
        assert heading in index
    assert "| stable | stable | 2.0.1+cu118 |" in index
    assert "| nightly | nightly | 2.1.0.dev20230605+cu118 |" in index
    md = sorted(p.name for p in tables.glob("*.md"))
    assert "summary.md" in md and "tables.md" in md
    assert "compile-vs-eager__nvidia-a100-sxm4-80gb__stable__bs1__default.md" in md
    assert "stable-vs-nightly__nvidia-a100-sxm4-80gb__default.md" in md  # named by its two builds
    assert "modes__nvidia-a100-sxm4-80gb__stable.md" in md
    assert len(list(tables.glob("*.csv"))) == len(md) - 1  # every table but the index has its CSV
    pngs = sorted(plots.glob("*.png"))
    assert len(pngs) == 2 * 5  # duration + improvement for each compile-vs-eager group
    for png in pngs:
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000
        assert f"../plots/{png.name}" in index
    err = capsys.readouterr().err
    assert "read 15 row(s) from 3 file(s)" in err and "0 row(s) skipped" in err


def test_the_index_names_paths_relative_to_the_project(run: Path):
    """A merged tables.md is committed and read elsewhere: no machine's absolute path in it."""
    assert main(["merge", str(run), "--no-plots"]) == 0
    index = (run / "tables" / "tables.md").read_text()
    assert "(kinds from matrix.yaml" in index
    assert str(ROOT) not in index and f"- {run}" not in index  # relative, even from /tmp
    assert f"- {os.path.relpath(run / 'raw', ROOT)}/" in index


def test_no_committed_result_names_an_absolute_path():
    """What merge wrote into results/ names the project's files relative to it."""
    pages = sorted((ROOT / "results").glob("*/tables/*.md"))
    assert pages
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"(^|[\s(])/(work|home|root|tmp|Users)/", text, re.M), page


def test_the_readme_excerpt_is_a_committed_table():
    """The README's example rows are lines of the merged tables.md it names, as merge wrote them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (source,) = set(re.findall(r"\((results/[^)]+/tables/tables\.md)\)", readme))
    lines = set((ROOT / source).read_text(encoding="utf-8").splitlines())
    rows = ("| Task/Model", "| Image", "| Object")
    excerpt = [line for line in readme.splitlines() if line.startswith(rows)]
    assert excerpt and all(line in lines for line in excerpt), [line for line in excerpt if line not in lines]


def test_merge_again_removes_stale_outputs(run: Path):
    assert main(["merge", str(run), "--no-plots"]) == 0
    assert not (run / "plots").exists()
    stale = [run / "tables" / "compile-vs-eager__old.md", run / "plots" / "old__duration.png"]
    stale[1].parent.mkdir()
    for path in stale:
        path.write_text("old")
    assert main(["merge", str(run), "--no-plots"]) == 0
    assert not any(path.exists() for path in stale)


def test_several_runs_need_an_output_folder(tmp_path: Path, capsys):
    a = write_run(tmp_path / "a", ROWS[:3])
    b = write_run(tmp_path / "b", ROWS[8:10])
    assert main(["merge", str(a), str(b)]) == 2
    assert capsys.readouterr().err.strip().endswith("say where to write with -o OUT")
    assert main(["merge", str(a), str(b), "-o", str(tmp_path / "out"), "--no-plots"]) == 0
    assert (tmp_path / "out" / "tables" / "tables.md").is_file()


def test_a_csv_file_inside_a_run_writes_into_that_run(run: Path):
    raw = run / "raw" / "stable__cuda-a100.csv"
    assert main(["merge", str(raw), "--no-plots"]) == 0
    assert (run / "tables" / "tables.md").is_file()


def test_duplicate_cells_keep_ok_then_latest_and_say_so(tmp_path: Path):
    first = write_run(tmp_path / "first", [row("stable", A100, "ViT", 1, "eager", "error")])
    later = eager("stable", A100, "ViT", 1, 10.0, 9.8, 9.7, 9.9)
    later["started_at"] = "2026-01-02T00:00:00+00:00"
    second = write_run(tmp_path / "second", [later])
    loaded = load([first, second])
    assert len(loaded.frame) == 1 and loaded.frame.loc[0, "status"] == "ok"
    assert len(loaded.superseded) == 1
    assert "first/raw/stable__cuda-a100.csv:2" in loaded.superseded[0]
    assert "second/raw/stable__cuda-a100.csv:2" in loaded.superseded[0]


def test_build_kinds_from_matrix_then_names(tmp_path: Path):
    kinds, note = build_kinds(["stable", "current", "nightly-0605", "mine"], ROOT / "matrix.yaml", True)
    assert kinds == {"stable": "stable", "current": "release", "nightly-0605": "nightly", "mine": "release"}
    assert "by name for: nightly-0605, mine" in note
    matrix = tmp_path / "matrix.yaml"
    text = (ROOT / "matrix.yaml").read_text().replace("kind: release", "kind: nightly")
    matrix.write_text(text)
    kinds, _ = build_kinds(["current"], matrix, True)
    assert kinds == {"current": "nightly"}


def test_every_build_is_compared_with_each_base_before_it(tmp_path: Path):
    rows = [
        eager("stable", A100, "ViT", 1, 10.0, 9.8, 9.7, 9.9),
        compiled(
            At("stable", A100, "ViT", 1, "default"), Times(8.0, 7.9, 7.8, 8.0), Speedup(1.25, 1.20, 1.30)
        ),
    ]
    for build in ("current", "nightly"):
        rows += [{**r, "build": build, "torch_version": "2.13.0"} for r in rows[:2]]
    loaded = load([write_run(tmp_path / "run", rows)])
    study = Study(loaded.frame, build_kinds(["stable", "current", "nightly"], ROOT / "matrix.yaml", True)[0])
    assert [t.name for t in stable_vs_others(study)] == [
        "stable-vs-nightly__nvidia-a100-sxm4-80gb__default",
        "stable-vs-current__nvidia-a100-sxm4-80gb__default",  # a release: not "stable-vs-nightly"
        "current-vs-nightly__nvidia-a100-sxm4-80gb__default",  # the release is the nightly's base too
    ]


# ---------------------------------------------------------------------------------------
# Bad input: one line naming the file (and line, field), exit 2 when nothing is usable.


def header() -> str:
    return ",".join(COLUMNS) + "\n"


def line(**fields: object) -> str:
    values = {**row("stable", A100, "ViT", 1, "eager", mean_ms=10.0, median_ms=9.8), **fields}
    return ",".join(str(values.get(c, "")) for c in COLUMNS) + "\n"


BAD_FILES = {
    "missing column": (
        header().replace(",status,", ",") + line().replace(",ok,", ","),
        r"x\.csv: header lacks column\(s\) status",
    ),
    "truncated": (header() + line()[:60], r"x\.csv:2: partial last row"),
    "unknown status": (header() + line(status="fine"), r"x\.csv:2: unknown status 'fine'"),
    "non-numeric": (header() + line(median_ms="fast"), r"x\.csv:2: field median_ms: 'fast' is not a number"),
    "negative": (header() + line(mean_ms="-1"), r"x\.csv:2: field mean_ms: -1 is not > 0"),
    "bad batch size": (
        header() + line(batch_size="1.5"),
        r"x\.csv:2: field batch_size: not a positive integer",
    ),
    "ok without a median": (header() + line(median_ms=""), r"x\.csv:2: field median_ms: empty on an ok row"),
    "bad accuracy": (header() + line(accuracy="maybe"), r"x\.csv:2: field accuracy: 'maybe' is not one of"),
    "no model": (header() + line(model=""), r"x\.csv:2: field model: empty"),
    "empty file": ("", r"x\.csv: empty file"),
    "header only": (header(), r"nothing usable to merge in 1 file\(s\), 0 row\(s\)$"),
    "wrong field count": (header() + line().rstrip("\n") + ",extra\n", r"x\.csv:2: \d+ fields, header has"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_corrupt_csv_alone_exits_2_with_one_line(tmp_path: Path, capsys, case: str):
    import re

    text, message = BAD_FILES[case]
    path = tmp_path / "run" / "raw" / "x.csv"
    path.parent.mkdir(parents=True)
    path.write_text(text)
    assert main(["merge", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("suite merge: error: nothing usable to merge")
    assert re.search(message, err.strip()), err
    assert not (tmp_path / "run" / "tables").exists()


def test_corrupt_rows_beside_good_ones_are_skipped_and_reported(tmp_path: Path, capsys):
    path = tmp_path / "run" / "raw" / "x.csv"
    path.parent.mkdir(parents=True)
    good = line()
    path.write_text(
        header() + good + line(model="DETR", task="Object Detection", median_ms="n/a") + line()[:50]
    )
    assert main(["merge", str(tmp_path / "run"), "--no-plots"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert "read 3 row(s) from 1 file(s); 1 cell(s) used, 2 row(s) skipped" in err[0]
    assert any("x.csv:3: field median_ms: 'n/a' is not a number" in e for e in err)
    assert any("x.csv:4: partial last row" in e for e in err)
    index = (tmp_path / "run" / "tables" / "tables.md").read_text()
    assert "x.csv:3: field median_ms" in index and "2 row(s) skipped" in index
    assert main(["merge", str(tmp_path / "run"), "--strict"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"suite merge: error: --strict: {path}:4: partial last row (writer killed mid-write) (and 1 more)"
    ]


def test_a_corrupt_file_beside_a_good_run_is_skipped(run: Path, tmp_path: Path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("run_id,build\nx,y\n")
    assert main(["merge", str(run), str(bad), "-o", str(tmp_path / "out"), "--no-plots"]) == 0
    err = capsys.readouterr().err
    assert "(1 more file(s) skipped)" in err
    assert f"{bad}: header lacks column(s)" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["merge", "{tmp}/nothing"], "{tmp}/nothing: no such file or folder"),
        (["merge", "{tmp}/empty"], "{tmp}/empty: no raw CSVs (looked for {tmp}/empty/raw/*.csv)"),
        (["merge", "{tmp}/empty", "--matrix", "{tmp}/m.yaml", "-o", "{tmp}"], "{tmp}/empty: no raw CSVs"),
    ],
)
def test_missing_inputs(tmp_path: Path, capsys, args: list[str], message: str):
    (tmp_path / "empty").mkdir()
    assert main([a.format(tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message.format(tmp=tmp_path) in err


def test_an_explicit_matrix_must_load(run: Path, tmp_path: Path, capsys):
    assert main(["merge", str(run), "--matrix", str(tmp_path / "none.yaml"), "--no-plots"]) == 2
    assert capsys.readouterr().err.strip() == f"suite merge: error: {tmp_path / 'none.yaml'}: no such file"


def test_csv_written_by_the_merge_reads_back(run: Path):
    assert main(["merge", str(run), "--no-plots"]) == 0
    with open(run / "tables" / "summary.csv", newline="") as fh:
        summary = list(csv.DictReader(fh))
    assert {r["build"] for r in summary} == {"stable", "nightly"}
    assert all(0 <= float(r["pass rate"]) <= 1 for r in summary)


def test_other_setups_get_their_own_tables_without_the_guide(tmp_path: Path):
    half = [{**r, "dtype": "float16"} for r in ROWS[:2]]
    loaded = load([write_run(tmp_path / "run", ROWS[:2] + half)])
    study = Study(loaded.frame, {"stable": "stable"})
    tables = {
        t.name: t for t in (compile_vs_eager(study, g, Reference.load()) for g in compile_groups(study))
    }
    assert sorted(tables) == [
        "compile-vs-eager__nvidia-a100-sxm4-80gb__stable__bs1__default__float16-inference-pretrained-weights",
        "compile-vs-eager__nvidia-a100-sxm4-80gb__stable__bs1__default__float32-inference-pretrained-weights",
    ]
    fp16, fp32 = (next(t for name, t in tables.items() if dtype in name) for dtype in ("float16", "float32"))
    assert fp32.columns[-1].md == "guide: A100 (batch size: 1)"
    assert [c.md for c in fp16.columns if c.markdown][-1] == "speed-up"
    assert "No guide comparison: the guide measured float32 inference" in fp16.markdown()


def test_plots_of_a_compiled_model_over_twice_as_slow(tmp_path: Path):
    """A speed-up below 0.5 (improvement below the plot's -100% floor; seen on a loaded CPU)
    drew a negative error bar, which matplotlib refuses: the merge crashed."""
    rows = [
        eager("stable", A100, "ViT", 1, 10.0, 9.8, 9.7, 9.9),
        compiled(
            At("stable", A100, "ViT", 1, "default"), Times(30.0, 29.0, 28.0, 31.0), Speedup(0.34, 0.30, 0.40)
        ),
    ]
    run = write_run(tmp_path / "run", rows)
    assert main(["merge", str(run)]) == 0
    assert len(list((run / "plots").glob("*.png"))) == 2


def test_plots_of_an_ok_compiled_row_without_a_speed_up(tmp_path: Path):
    """An ok compiled row may lack the speed-up (a hand-made or older CSV): the merge accepts it,
    its table cell reads "—", and its plot said nothing sensible (the merge crashed, exit 3)."""
    from matplotlib.figure import Figure

    from suite.report.measurement import measurement_of
    from suite.report.plots import annotate_failure

    rows = [
        eager("stable", A100, "ViT", 1, 10.0, 9.8, 9.7, 9.9),
        row("stable", A100, "ViT", 1, "default", mean_ms=8.0, median_ms=7.9, ci95_low_ms=7.8, ci95_high_ms=8),
    ]
    run = write_run(tmp_path / "run", rows)
    assert main(["merge", str(run)]) == 0
    assert len(list((run / "plots").glob("*.png"))) == 2
    table = (run / "tables" / "compile-vs-eager__nvidia-a100-sxm4-80gb__stable__bs1__default.md").read_text()
    assert "| Image Classification/ViT | 9.800 ‡ | 7.900 | — |" in table  # no pair: each cell's median
    compiled_row = next(r for r in load([run]).frame.itertuples(index=False) if r.mode == "default")
    ax = Figure().add_subplot()
    annotate_failure(ax, 0, measurement_of(compiled_row), "speed-up: ")
    assert [t.get_text() for t in ax.texts] == ["speed-up: not measured"]


def test_rows_a_resumed_run_set_aside_are_not_read(run: Path):
    """A resumed run moves the rows of the cells it runs again to RUN/superseded/<name>.csv
    (suite.run.resume): they are not results, and the merge reads RUN/raw/ only."""
    from suite.run.resume import superseded_path

    moved = superseded_path(run / "raw" / "stable__cuda-a100.csv")
    with RowWriter(moved) as w:  # a later start than the raw row of the same cell: it would win
        w.append({**ROWS[0], "started_at": "2026-06-01T00:00:00+00:00", "mean_ms": 99.0})
    loaded = load([run])
    assert moved.parent == run / "superseded" and moved not in loaded.files
    assert loaded.rows_read == len(ROWS) and not loaded.superseded
    assert 99.0 not in set(loaded.frame["mean_ms"])


def test_beside_the_guide_the_back_to_back_figures_stand_when_the_rows_have_them(tmp_path: Path) -> None:
    """The guide's statistic is the mean of back-to-back calls: rows with throughput show it (with
    its paired speed-up) beside the guide's figure, and the latency durations are named as such;
    the rows' TF32 settings are in the setup line."""
    b2b = {
        "eager_throughput_ms": 9.0,
        "eager_throughput_ci95_low_ms": 8.9,
        "eager_throughput_ci95_high_ms": 9.1,
        "throughput_ms": 6.0,
        "throughput_ci95_low_ms": 5.9,
        "throughput_ci95_high_ms": 6.1,
        "throughput_speedup": 1.5,
        "throughput_speedup_ci95_low": 1.45,
        "throughput_speedup_ci95_high": 1.55,
        "tf32_matmul": "false",
        "tf32_cudnn": "true",
        "matmul_precision": "highest",
    }
    rows = [
        {**eager("stable", A100, "ViT", 1, 10.0, 9.8, 9.7, 9.9), **b2b},
        {
            **compiled(
                At("stable", A100, "ViT", 1, "default"), Times(8.0, 7.9, 7.8, 8.0), Speedup(1.25, 1.20, 1.30)
            ),
            **b2b,
        },
    ]
    loaded = load([write_run(tmp_path / "run", rows)])
    kinds, _ = build_kinds(["stable", "nightly"], ROOT / "matrix.yaml", explicit=True)
    (t,) = tables_by_title(Study(loaded.frame, kinds)).values()
    assert [c.md for c in t.columns if c.markdown] == [
        "Task/Model",
        "no compile (ms)",
        "compile (ms)",
        "speed-up",
        "back-to-back, no compile (ms)",
        "back-to-back, compile (ms)",
        "back-to-back speed-up",
        "guide: A100 (batch size: 1)",
    ]
    (vit,) = t.markdown_rows()
    assert vit[4:7] == ["9.000", "6.000", "33.3% · 1.50x [1.45, 1.55]"]
    text = t.markdown()
    assert "Durations: latency" in text and "back-to-back (ms), back-to-back speed-up: throughput" in text
    assert "TF32: matmul off, cuDNN on" in t.subtitle


def test_a_run_whose_rows_carry_two_nightlies_is_refused_in_one_line(tmp_path: Path, capsys):
    """A re-run that resolved another night would mix two nights in one run's tables: the merge
    refuses the run (exit 2, one line) and writes nothing; two runs of two nights merge."""
    first = [row("nightly", A100, "ViT", bs, "eager", nightly_date="20261125", median_ms=5.0, mean_ms=5.0)
             for bs in (1, 4)]  # fmt: skip
    second = [row("nightly", A100, "ViT", 16, "eager", nightly_date="20261126", median_ms=5.0, mean_ms=5.0)]
    older = [row("nightly", A100, "DETR", 1, "eager", "oom", torch_version="2.16.0.dev20261124+cu130")]
    mixed = write_one_csv(tmp_path / "mixed", [*first, *second, *older], "nightly__cuda-a100.csv")
    assert main(["merge", str(mixed)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("suite merge: error: run t, build nightly: rows of 3 torch nightlies ")
    assert "(20261124, 20261125, 20261126)" in err and "new run id" in err
    assert not (mixed / "tables").exists()
    for r in second:
        r["run_id"] = "t2"
    one = write_one_csv(tmp_path / "one", first, "nightly__cuda-a100.csv")
    other = write_one_csv(tmp_path / "other", second, "nightly__cuda-a100.csv")
    assert load([one, other]).frame.shape[0] == 3
