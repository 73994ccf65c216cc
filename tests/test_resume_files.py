"""Resuming from a damaged raw CSV: a torn last row is cut and reported; anything else the
suite does not understand stops the run (exit 2, one line naming the file and line) before
any cell runs, with the file left as it was. A complete row is never lost either way."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest
from helpers import examples, stub_environment
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suite.cli import main
from suite.errors import UsageError
from suite.results import COLUMNS, CsvFormatError, RowWriter, read_rows
from suite.run import launch, preflight, resume

REPO = Path(__file__).resolve().parent.parent
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
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        args = ["--matrix", str(TINY), "--profile", "tiny", "--device", "cpu", "--min-free-mb", "0"]
        code = main(["run", *args, "--out", str(tmp_path), "--run-id", "r"])
    assert code == 2
    assert err.getvalue().strip().splitlines() == [
        f"suite run: error: {csv_path}:4: 3 fields, header has {len(COLUMNS)}; nothing was run: "
        "fix or remove the row, or use another --run-id"
    ]
    assert csv_path.read_bytes() == broken and not started
