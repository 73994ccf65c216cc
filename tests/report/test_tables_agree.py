"""Tables that agree with themselves: in every compile-vs-eager, stable-vs-other and modes table,
a row's two durations and its % improvement come from one measurement (the compiled cell's
paired medians), so the % read off the durations is the % printed. The rows are made the way a
worker makes them (suite.measure.cell from timed samples), with standalone eager cells whose
means differ, as real ones do."""

from __future__ import annotations

import random
import re
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from suite.measure.accuracy_rule import Verdict
from suite.measure.cell import compiled_fields, latency_fields
from suite.report.load import load
from suite.report.reference import Reference
from suite.report.study import Study
from suite.report.tables.compile_vs_eager import compile_groups, compile_vs_eager
from suite.report.tables.modes import compile_modes
from suite.report.tables.stable_vs import stable_vs_others
from suite.results import PASS, RowWriter

GPU = "NVIDIA A100-SXM4-80GB"


def _samples(rng: random.Random, ms: float, n: int = 31) -> list[float]:
    return [ms * rng.lognormvariate(0, 0.05) for _ in range(n)]


def _row(build: str, model: str, mode: str, fields: dict) -> dict:
    return {
        "run_id": "t", "build": build, "device": "cuda", "gpu_name": GPU, "task": "Image Classification",
        "model": model, "model_id": model, "weights": "pretrained", "batch_size": 1, "mode": mode,
        "dtype": "float32", "scenario": "inference", "status": "ok", "error": "",
        "torch_version": "2.0.1", "started_at": "2026-01-01T00:00:00+00:00", **fields,
    }  # fmt: skip


def _rows(seed: int, eager_ms: float, gains: tuple[float, float]) -> list[dict]:
    """Two builds, one model, eager + default + reduce-overhead, as the worker would write them:
    the eager cell timed alone (its own process: another median, another mean), each compiled
    cell with its own interleaved eager samples."""
    rng = random.Random(seed)
    rows = []
    for build in ("stable", "nightly"):
        rows.append(
            _row(build, "ViT", "eager", latency_fields(_samples(rng, eager_ms * rng.uniform(0.8, 1.2))))
        )
        for mode, gain in zip(("default", "reduce-overhead"), gains, strict=True):
            e = _samples(rng, eager_ms)
            c = _samples(rng, eager_ms / gain)
            fields = compiled_fields(e, c, 1000.0, (0, 1, 1), Verdict(PASS, 0.0))
            rows.append(_row(build, "ViT", mode, {**fields, **latency_fields(c)}))
    return rows


PCT = re.compile(r"^(-?\d+\.\d)% · ")


def _pct(no_compile: str, compile_: str) -> tuple[float, float]:
    """The range of % improvement the two printed durations (3 decimals) allow."""
    e, c = float(no_compile.split()[0]), float(compile_.split()[0])
    lo = (1 - (c + 0.0005) / (e - 0.0005)) * 100
    hi = (1 - (c - 0.0005) / (e + 0.0005)) * 100
    return lo, hi


def _agrees(no_compile: str, compile_: str, gain: str) -> bool:
    lo, hi = _pct(no_compile, compile_)
    match = PCT.match(gain)
    assert match, gain
    shown = float(match.group(1))
    return lo - 0.05 <= shown <= hi + 0.05  # the % is printed to one decimal


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    eager_ms=st.floats(0.5, 500.0),
    gains=st.tuples(st.floats(0.3, 4.0), st.floats(0.3, 4.0)),
)
def test_every_row_reads_its_percent_off_its_durations(
    tmp_path_factory, seed: int, eager_ms: float, gains: tuple[float, float]
) -> None:
    folder: Path = tmp_path_factory.mktemp("run")
    for r in _rows(seed, eager_ms, gains):
        with RowWriter(folder / "raw" / f"{r['build']}__cuda.csv") as w:
            w.append(r)
    study = Study(load([folder]).frame, {"stable": "stable", "nightly": "nightly"})
    reference = Reference.load(Path("/nonexistent"))  # no guide: only our figures
    checked = 0
    for g in compile_groups(study):
        for row in compile_vs_eager(study, g, reference).markdown_rows():
            assert _agrees(row[1], row[2], row[3]), row
            checked += 1
    for modes in compile_modes(study):
        for row in modes.markdown_rows():
            for i in (2, 5):  # each mode: no compile, compile, speed-up
                assert _agrees(row[i], row[i + 1], row[i + 2]), row
                checked += 1
    for table in stable_vs_others(study):
        for row in table.markdown_rows():
            assert _agrees(row[2], row[3], row[6]), row  # the stable build's pair and speed-up
            assert _agrees(row[4], row[5], row[7]), row  # the other build's
            checked += 2
            # other vs stable, no compile: the ratio of the two no-compile durations shown
            e_s, e_b = float(row[2].split()[0]), float(row[4].split()[0])
            factor = float(row[8].split(" · ")[1].split("x")[0])
            rounding = e_s / e_b * (0.0005 / e_s + 0.0005 / e_b)  # of the 3-decimal durations
            assert abs(factor - e_s / e_b) <= 0.005 + rounding + 1e-9, row
    assert checked == 4 + 4 + 4


def test_a_cell_timed_on_an_unhealthy_machine_is_marked_and_counted(tmp_path: Path) -> None:
    from suite.report.tables.cells import HEALTH_NOTE
    from suite.report.tables.summary import summary_table

    rows = _rows(1, 10.0, (1.5, 2.0))
    for r in rows:
        r["health"] = "busy,steal" if (r["build"], r["mode"]) == ("stable", "default") else "ok"
    for r in rows:
        with RowWriter(tmp_path / "raw" / f"{r['build']}__cuda.csv") as w:
            w.append(r)
    study = Study(load([tmp_path]).frame, {"stable": "stable", "nightly": "nightly"})
    reference = Reference.load(Path("/nonexistent"))
    tables = {t.title: t for t in (compile_vs_eager(study, g, reference) for g in compile_groups(study))}
    busy = next(t for title, t in tables.items() if "stable" in title and title.endswith("mode default"))
    (row,) = busy.markdown_rows()
    assert row[1].endswith(" §") and row[2].endswith(" §") and row[3].endswith(" §")
    assert HEALTH_NOTE in busy.markdown()
    calm = next(t for title, t in tables.items() if "nightly" in title and title.endswith("mode default"))
    assert "§" not in " ".join(calm.markdown_rows()[0]) and HEALTH_NOTE not in calm.markdown()
    (stable_vs,) = [t for t in stable_vs_others(study) if t.title.endswith("mode default")]
    assert stable_vs.markdown_rows()[0][8].endswith(" §")  # a ratio with a suspect side is suspect
    counts = {(r[0], r[1]): r[-1] for r in summary_table(study).markdown_rows()}
    assert counts["stable", "default"] == "1" and counts["nightly", "default"] == "0"
