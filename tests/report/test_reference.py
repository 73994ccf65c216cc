"""results/reference/: the guide's published figures, checked against the guide itself."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from suite.errors import UsageError
from suite.report.reference import REFERENCE_DIR, Reference, gpu_class, read_reference_csv

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT.parent / "shared" / "seeds" / "001_16d60286288c1fc8.txt"  # the guide's page text


@pytest.fixture(scope="module")
def ref() -> Reference:
    return Reference.load(REFERENCE_DIR)


def figure(ref: Reference, table: str, model: str, batch_size: int):
    rows = [f for f in ref.figures if f.table == table and f.model == model and f.batch_size == batch_size]
    assert len(rows) == 1, (table, model, batch_size, rows)
    return rows[0]


# (table, model, batch size, without torch.compile, with torch.compile), copied from the guide.
GUIDE_FIGURES = [
    ("A100 (batch size: 1)", "ViT", 1, 9.325, 7.584),
    ("A100 (batch size: 16)", "Maskformer", 16, 638.570, 579.826),
    ("V100 (batch size: 1)", "ViT", 1, 10.495, 6.00),
    ("V100 (batch size: 4)", "Conditional-DETR", 4, 97.464, 69.739),
    ("T4 (batch size: 1)", "DETR", 1, 73.100, 53.99),
    ("T4 (batch size: 16)", "Maskformer", 16, 2842.940, 2656.88),
    ("T4 (batch size: 16)", "Resnet-101", 16, 1619.505, 1262.758),
    ("PyTorch Nightly: A100", "BeiT", 1, 12.462, 6.954),
    ("PyTorch Nightly: V100", "DETR", 4, 88.402, 62.949),
    ("Reduce Overhead: A100", "ResNet", 4, 7.261, 2.187),
    ("Reduce Overhead: T4", "ConvNeXT", 1, 32.137, 31.84),
    ("Reduce Overhead: T4", "MobileNet", 4, 78.311, 50.983),
]


@pytest.mark.parametrize(("table", "model", "bs", "without", "with_"), GUIDE_FIGURES)
def test_figures_match_the_guide(
    ref: Reference, table: str, model: str, bs: int, without: float, with_: float
):
    f = figure(ref, table, model, bs)
    assert (f.eager_ms, f.compiled_ms) == (without, with_)


def test_builds_modes_and_sizes(ref: Reference):
    by_file = {}
    for f in ref.figures:
        by_file.setdefault(f.source.split(":")[0].rsplit("/", 1)[-1], set()).add((f.build, f.mode))
    assert by_file == {
        "guide_torch2.0.1.csv": {("2.0.1", "default")},
        "guide_nightly.csv": {("2.1.0dev", "default")},
        "guide_reduce_overhead.csv": {("2.1.0dev", "reduce-overhead")},
    }
    main = [f for f in ref.figures if f.build == "2.0.1"]
    assert len(main) == 3 * (12 + 11 + 11)  # OwlViT has batch size 1 only
    assert {(f.gpu, f.batch_size) for f in main} == {
        (g, b) for g in ("A100", "V100", "T4") for b in (1, 4, 16)
    }
    assert {f.batch_size for f in ref.figures if f.model == "OwlViT"} == {1}
    assert len([f for f in ref.figures if f.table.startswith("PyTorch Nightly")]) == 18
    assert len([f for f in ref.figures if f.table.startswith("Reduce Overhead")]) == 16


def test_oom_is_not_a_number(ref: Reference):
    oom = sorted((f.table, f.model) for f in ref.figures if f.compiled_ms is None or f.eager_ms is None)
    assert oom == [
        ("PyTorch Nightly: T4", "DETR"),
        ("PyTorch Nightly: V100", "DETR"),
        ("T4 (batch size: 16)", "DETR"),
        ("V100 (batch size: 16)", "DETR"),
    ]
    assert figure(ref, "V100 (batch size: 16)", "DETR", 16).speedup is None


def test_t4_nightly_beit_16_is_flagged_as_erratum(ref: Reference):
    t4 = figure(ref, "PyTorch Nightly: T4", "BeiT", 16)
    a100 = figure(ref, "PyTorch Nightly: A100", "BeiT", 16)
    assert (t4.eager_ms, t4.compiled_ms) == (a100.eager_ms, a100.compiled_ms)
    assert "A100" in t4.erratum
    assert [f for f in ref.figures if f.erratum] == [t4]


def test_guide_speedup_is_ratio_of_means(ref: Reference):
    f = figure(ref, "A100 (batch size: 1)", "ViT", 1)
    assert f.speedup == pytest.approx(9.325 / 7.584)


@pytest.mark.parametrize(
    ("name", "cls"),
    [
        ("NVIDIA A100-SXM4-40GB", "A100"),
        ("NVIDIA A100 80GB PCIe", "A100"),
        ("Tesla V100-SXM2-16GB", "V100"),
        ("Tesla T4", "T4"),
        ("NVIDIA H100 80GB HBM3", None),
        ("NVIDIA RTX A1000", None),
        ("AMD EPYC", None),
    ],
)
def test_gpu_class(name: str, cls: str | None):
    assert gpu_class(name) == cls


def test_lookup_picks_the_table_of_the_same_kind_and_mode(ref: Reference):
    gpu = "NVIDIA A100-SXM4-80GB"
    assert ref.table_for(gpu, "stable", "default", 4) == "A100 (batch size: 4)"
    assert ref.table_for(gpu, "nightly", "default", 4) == "PyTorch Nightly: A100"
    assert ref.table_for(gpu, "nightly", "reduce-overhead", 1) == "Reduce Overhead: A100"
    assert ref.table_for(gpu, "release", "default", 16) == "A100 (batch size: 16)"
    assert ref.table_for(gpu, "release", "reduce-overhead", 1) == "Reduce Overhead: A100"
    assert ref.table_for(gpu, "stable", "reduce-overhead", 1) is None  # the guide ran it on nightly only
    assert ref.table_for("Tesla V100-SXM2-16GB", "nightly", "reduce-overhead", 1) is None
    assert ref.table_for("NVIDIA H100", "stable", "default", 1) is None
    # names compared loosely; a model the matched table lacks gives None
    assert ref.lookup(gpu, "stable", "default", 1, "object detection", "conditional detr").eager_ms == 31.219
    assert ref.lookup(gpu, "nightly", "default", 1, "Image Classification", "ViT") is None


def test_bad_reference_file_names_file_line_and_field(tmp_path: Path):
    bad = tmp_path / "guide.csv"
    header = "task,model,GPU,batch size,with torch.compile,without torch.compile,build,mode,table,erratum\n"
    bad.write_text(header + "Image Classification,ViT,A100,1,fast,9.3,2.0.1,default,A100 (batch size: 1),\n")
    with pytest.raises(UsageError, match=r"guide\.csv:2: with torch\.compile: 'fast'"):
        read_reference_csv(bad)
    bad.write_text("task,model\nx,y\n")
    with pytest.raises(UsageError, match="header lacks column"):
        read_reference_csv(bad)


def _seed_rows(text: str) -> list[tuple[str, str, str, int, str, str]]:
    """(table, task, model, batch size, without, with) for every table row of the guide's page."""
    rows, section, heading = [], "", ""
    for line in text.splitlines():
        s = line.strip()
        if s in ("PyTorch Nightly", "Reduce Overhead"):
            section = s
            continue
        m = re.fullmatch(r"(?:### )?(A100|V100|T4)( \(batch size: (\d+)\))?", s)
        if m:
            heading = s.removeprefix("### ")
            batch = m.group(3)
            continue
        if "|" not in s or s.startswith("Task/Model"):
            continue
        cells = [c.strip() for c in s.strip("|").split("|") if c.strip()]
        task, model = cells[0].split("/", 1)
        if batch:
            rows.append((heading, task, model, int(batch), cells[1], cells[2]))
        else:
            bs = 1 if cells[1] == "Unbatched" else int(cells[1])
            rows.append((f"{section}: {heading}", task, model, bs, cells[2], cells[3]))
    return rows


@pytest.mark.skipif(not SEED.is_file(), reason="the guide's page text is not beside this checkout")
def test_every_row_matches_the_guide_page_text():
    import csv

    ours = []
    for path in sorted(REFERENCE_DIR.glob("*.csv")):
        with open(path, newline="") as fh:
            for r in csv.DictReader(fh):
                ours.append(
                    (
                        r["table"],
                        r["task"],
                        r["model"],
                        int(r["batch size"]),
                        r["without torch.compile"],
                        r["with torch.compile"],
                    )
                )
    assert sorted(ours) == sorted(_seed_rows(SEED.read_text(encoding="utf-8")))
