"""Resuming from a damaged raw CSV: a torn last row is cut and reported; anything else the
suite does not understand stops the run (exit 2, one line naming the file and line) before
any cell runs, with the file left as it was. A complete row is never lost either way."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import call, examples, stub_environment

from suite.errors import UsageError
from suite.results import COLUMNS, KEY_COLUMNS, CsvFormatError, RowWriter, read_rows
from suite.run import launch, preflight, resume
from suite.run.resume import superseded_path

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "data" / "tiny-matrix.yaml"


def sample_rows() -> list[dict[str, object]]:
    rows = []
    for i, status in enumerate(["ok", "error", "ok", "timeout", "oom", "ok"]):
        rows.append(
            {
                "run_id": "r",
                "build": "b",
                "device": "cpu",
                "model": f"M{i}",
                "batch_size": 1,
                "mode": "eager",
                "status": status,
                "error": "" if status == "ok" else f"{status}, with a comma",
                "median_ms": 1.5 if status == "ok" else None,
                "started_at": f"2026-01-01T00:00:0{i}+00:00",
            }
        )
    return rows


def valid_csv(path: Path) -> bytes:
    with RowWriter(path) as w:
        for row in sample_rows():
            w.append(row)
    return path.read_bytes()


@st.composite
def damage(draw: st.DrawFn, data: bytes) -> bytes:
    """A valid file after one or two kinds of damage: cut anywhere, bytes inserted,
    overwritten or appended, a line duplicated or dropped."""
    for _ in range(draw(st.integers(1, 2))):
        kind = draw(st.sampled_from(["cut", "insert", "overwrite", "append", "duplicate", "drop"]))
        at = draw(st.integers(0, len(data)))
        junk = draw(
            st.binary(min_size=1, max_size=40) | st.sampled_from([b",", b"\n", b'"', b"\x00", b"ok\n"])
        )
        lines = data.splitlines(keepends=True)
        if kind == "cut":
            data = data[:at]
        elif kind == "insert":
            data = data[:at] + junk + data[at:]
        elif kind == "overwrite":
            data = data[:at] + junk + data[at + len(junk) :]
        elif kind == "append":
            data = data + junk
        elif kind == "duplicate" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            data = b"".join([*lines[: i + 1], lines[i], *lines[i + 1 :]])
        elif kind == "drop" and lines:
            i = draw(st.integers(0, len(lines) - 1))
            data = b"".join(lines[:i] + lines[i + 1 :])
    return data


def complete_rows(path: Path) -> list[dict[str, str]]:
    """The rows a careful reader finds whole in a (damaged) file; [] if it cannot read it."""
    try:
        return read_rows(path).rows
    except (CsvFormatError, UnicodeDecodeError):
        return []


@pytest.fixture
def no_fsync(monkeypatch: pytest.MonkeyPatch) -> None:
    """fsync makes a row durable, which no test here can observe; it only costs time."""
    monkeypatch.setattr(os, "fsync", lambda fd: None)


@settings(
    max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), keep_failed=st.booleans())
def test_damaged_csv_is_repaired_or_refused_and_no_row_is_lost(
    data: st.DataObject, keep_failed: bool, tmp_path_factory: pytest.TempPathFactory, no_fsync: None
) -> None:
    run = tmp_path_factory.mktemp("run")
    path = run / "raw" / "b__cpu.csv"
    path.parent.mkdir()
    damaged = data.draw(damage(valid_csv(path)))
    path.write_bytes(damaged)
    torn_free = damaged[: damaged.rfind(b"\n") + 1]
    reference = run / "reference.csv"
    reference.write_bytes(torn_free)
    whole = complete_rows(reference)
    try:
        state = resume.prepare(path, keep_failed)
    except UsageError as exc:
        text = str(exc)
        assert "\n" not in text and str(path) in text, text
        assert path.read_bytes() == torn_free, "a refused file must stay as it was (torn tail aside)"
        assert not (run / "superseded").exists()
        return
    after = read_rows(path)
    assert after.repaired == 0 and after.skipped == 0
    moved = read_rows(run / "superseded" / path.name).rows if (run / "superseded").exists() else []
    for row in whole:  # every complete row is kept or moved, none lost
        assert row in after.rows or row in moved, row
    assert len(after.rows) + len(moved) == len(whole)
    if keep_failed:
        assert not moved
    else:
        assert all(r["status"] in ("ok", "oom") for r in after.rows)
    assert len(state.done) == len({tuple(r[c] for c in ("model", "batch_size")) for r in after.rows})


def test_a_bad_row_in_the_middle_stops_the_run_before_any_cell(tmp_path: Path, monkeypatch) -> None:
    """Through the CLI: one line naming file and line, exit 2, the file untouched."""
    monkeypatch.setattr(
        preflight,
        "probe",
        lambda device, python=None: stub_environment(torch_version="9.9.9"),
    )
    started: list[object] = []
    monkeypatch.setattr(launch, "run_worker", lambda *a, **k: started.append(a))
    csv_path = tmp_path / "r" / "raw" / "torch9.9.9__cpu.csv"
    csv_path.parent.mkdir(parents=True)
    good = valid_csv(csv_path)
    lines = good.splitlines(keepends=True)
    broken = b"".join([*lines[:3], b"half,a,row\n", *lines[3:]])
    csv_path.write_bytes(broken)
    args = ["--matrix", str(TINY), "--profile", "tiny", "--device", "cpu", "--min-free-mb", "0"]
    code, err = call(["run", *args, "--out", str(tmp_path), "--run-id", "r"])
    assert code == 2
    assert err.strip().splitlines() == [
        f"suite run: error: {csv_path}:4: 3 fields, header has {len(COLUMNS)}; nothing was run: "
        "fix or remove the row, or use another --run-id"
    ]
    assert csv_path.read_bytes() == broken and not started


# --- a cell recorded more than once -----------------------------------------------------------


def cell_row(model: str, status: str, second: int) -> dict[str, object]:
    """A row the merge can read too (its required fields filled)."""
    ok = status == "ok"
    return {
        "run_id": "r",
        "build": "torch9.9.9",
        "device": "cpu",
        "gpu_name": "cpu",
        "task": "Image Classification",
        "model": model,
        "model_id": {"TinyViT": "vit (config)", "TinyResNet": "resnet (config)"}.get(model, model),
        "weights": "random",
        "batch_size": 1,
        "mode": "eager",
        "dtype": "float32",
        "scenario": "inference",
        "status": status,
        "error": "" if ok else status,
        "mean_ms": 2.0 if ok else None,
        "median_ms": 1.5 if ok else None,
        "started_at": f"2026-01-01T00:00:{second:02d}+00:00",
    }


def test_duplicated_rows_are_reported_and_one_row_per_cell_kept(tmp_path: Path, monkeypatch) -> None:
    """The issue's case (more rows than cells, and a resume that said "nothing new"), through
    the CLI: both cells are done, so nothing runs; the extra rows move to superseded/."""
    monkeypatch.setattr(
        preflight, "probe", lambda device, python=None: stub_environment(torch_version="9.9.9")
    )
    started: list[object] = []
    monkeypatch.setattr(launch, "run_worker", lambda *a, **k: started.append(a))
    csv_path = tmp_path / "r" / "raw" / "torch9.9.9__cpu.csv"
    rows = [
        cell_row("TinyViT", "ok", 1),
        cell_row("TinyViT", "ok", 1),  # the same line twice: the later one counts, as in merge
        cell_row("TinyResNet", "ok", 2),
        cell_row("TinyResNet", "error", 3),  # a later failure does not beat an ok row
    ]
    with RowWriter(csv_path) as w:
        for row in rows:
            w.append(row)
    args = ["--matrix", str(TINY), "--profile", "tiny", "--device", "cpu", "--min-free-mb", "0"]
    code, err = call(["run", *args, "--out", str(tmp_path), "--run-id", "r"])
    assert code == 0 and not started, err
    lines = err.splitlines()
    assert lines[0] == (
        f"{csv_path}: 2 more row(s) of a cell already recorded (line(s) 2, 5); one row per cell counts, "
        "chosen as the merge does (an ok row, else the latest); the others moved to "
        f"{tmp_path / 'r' / 'superseded' / csv_path.name}"
    )
    assert lines[-1].startswith("done: nothing new; 2 already recorded")
    kept = read_rows(csv_path).rows
    assert [(r["model"], r["status"]) for r in kept] == [("TinyViT", "ok"), ("TinyResNet", "ok")]
    moved = read_rows(tmp_path / "r" / "superseded" / csv_path.name).rows
    assert sorted((r["model"], r["status"]) for r in moved) == [("TinyResNet", "error"), ("TinyViT", "ok")]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rows=st.lists(
        st.tuples(
            st.sampled_from("ABC"), st.sampled_from(["ok", "oom", "error", "timeout"]), st.integers(0, 5)
        ),
        min_size=1,
        max_size=9,
    ),
    keep_failed=st.booleans(),
)
def test_resume_keeps_the_row_the_merge_keeps(
    rows: list[tuple[str, str, int]],
    keep_failed: bool,
    tmp_path_factory: pytest.TempPathFactory,
    no_fsync: None,
) -> None:
    """Any mix of repeated cells: the row a resume counts for a cell is the one `merge` uses,
    and every row stays in the raw file or in superseded/."""
    from suite.report.load import load

    run = tmp_path_factory.mktemp("run")
    path = run / "raw" / "b__cpu.csv"
    with RowWriter(path) as w:
        for model, status, second in rows:
            w.append(cell_row(model, status, second))
    everything = read_rows(path).rows
    merged = load([path]).frame
    chosen = {r["model"]: (r["status"], r["started_at"]) for r in merged.to_dict("records")}

    state = resume.prepare(path, keep_failed)

    after = read_rows(path).rows
    moved = read_rows(superseded_path(path)).rows if superseded_path(path).exists() else []
    assert sorted(map(str, after + moved)) == sorted(map(str, everything))  # nothing lost or copied
    assert {status for status in state.done.values()} <= {"ok", "oom", "error", "timeout"}
    counted = {key[KEY_COLUMNS.index("model")]: status for key, status in state.done.items()}
    for model, (status, _) in chosen.items():
        if keep_failed or status in ("ok", "oom"):
            assert counted[model] == status, (model, chosen, counted)
        else:
            assert model not in counted  # runs again
    if not keep_failed:  # one row per cell left, the merge's own choice
        assert sorted((r["model"], r["status"], r["started_at"]) for r in after) == sorted(
            (m, s, t) for m, (s, t) in chosen.items() if s in ("ok", "oom")
        )
    else:
        assert not moved and after == everything
