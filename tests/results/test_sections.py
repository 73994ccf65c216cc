"""The row in sections: each column defined once, in one section; the CSV's order kept from
every committed run; a worker's result by section and back; the readers' names taken from the
sections."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from suite import results
from suite.measure import cudagraphs, energy, machine, phases, provenance
from suite.results import COLUMNS, layout, sections
from suite.results.layout import BY_SECTION, COLUMN_OF, SECTIONS
from suite.results.sections.base import Column, Section

ROOT = Path(__file__).resolve().parents[2]


def test_every_column_is_in_one_section_and_in_the_csv_order_once() -> None:
    names = [c.name for s in SECTIONS for c in s.columns]
    assert len(names) == len(set(names)) == len(COLUMN_OF)
    assert sorted(layout.ORDER) == sorted(names) and len(set(layout.ORDER)) == len(layout.ORDER)
    assert results.COLUMNS == layout.ORDER
    assert [s.name for s in SECTIONS] == list(BY_SECTION)
    assert all(results.SECTION_OF[n] for n in COLUMNS)


def _committed_headers() -> dict[tuple[str, ...], str]:
    headers: dict[tuple[str, ...], str] = {}
    for path in sorted((ROOT / "results").glob("**/raw/*.csv")):
        with path.open(newline="") as fh:
            headers.setdefault(tuple(next(csv.reader(fh))), str(path.relative_to(ROOT)))
    return headers


def test_every_committed_runs_columns_keep_their_names_and_order() -> None:
    """Old and new rows stay comparable: every column a committed run wrote is still a column,
    in the same order relative to the others (later ones were appended or came between)."""
    headers = _committed_headers()
    assert headers, "no committed raw CSV found"
    for header, where in headers.items():
        assert set(header) <= set(COLUMNS), (where, sorted(set(header) - set(COLUMNS)))
        positions = [COLUMNS.index(c) for c in header]
        assert positions == sorted(positions), where


def test_a_section_says_what_is_wrong_with_it() -> None:
    with pytest.raises(ValueError, match="without a doc"):
        Section("x", "X", "about", (Column("a"),))
    with pytest.raises(ValueError, match="listed twice"):
        Section("x", "X", "about", (Column("a", doc="a"), Column("a", doc="a")))
    with pytest.raises(ValueError, match="at least one column"):
        Section("x", "X", "about", ())


def test_a_workers_result_goes_by_section_and_back() -> None:
    row = {"status": "ok", "error": "", "median_ms": 1.5, "compile_s": 3.0, "phase_note": "n", "odd": 1}
    result = {**row, "samples": {"eager": [1.0]}, "rows": [{"status": "ok", "batch_size": 2}]}
    wire = json.loads(json.dumps(layout.to_wire(result)))
    assert wire["sections"]["latency"] == {"median_ms": 1.5}
    assert wire["sections"]["outcome"] == {"status": "ok", "error": ""}
    assert wire["sections"]["phases"] == {"phase_note": "n"}
    assert wire["sections"][layout.OTHER] == {"odd": 1}  # the reader warns of it and drops it
    assert wire["rows"][0]["sections"]["key"] == {"batch_size": 2}
    assert layout.from_wire(wire) == result
    # what is not a sectioned result comes back as it was, for the reader's own checks
    flat = {"status": "ok", "median_ms": 1.0}
    assert layout.from_wire(flat) == flat and layout.from_wire([1]) == [1]


def test_sections_come_in_their_order_and_their_columns_in_theirs() -> None:
    nested = layout.nest({"wall_s": 1.0, "status": "ok", "speedup": 2.0, "median_ms": 1.0})
    assert list(nested) == ["outcome", "latency"]
    assert list(nested["outcome"]) == ["status", "wall_s"]
    assert list(nested["latency"]) == ["median_ms", "speedup"]


def test_the_child_sides_column_lists_are_the_sections() -> None:
    """The modules that fill a section take its names from it (no list spelled twice)."""
    assert set(phases.COLUMNS) | {phases.FIRST_RUN} == set(BY_SECTION["phases"].names)
    assert BY_SECTION["energy"].names == energy.COLUMNS
    assert BY_SECTION["cudagraphs"].names == cudagraphs.COLUMNS
    assert set(provenance.PROVENANCE_COLUMNS) <= set(BY_SECTION["key"].names) | set(
        BY_SECTION["provenance"].names
    )
    assert tuple(machine.columns(None, {})) == sections.provenance.MACHINE_NAMES
    assert set(results.health.COLUMNS) <= set(BY_SECTION["health"].names)
    for group, section in (
        (sections.throughput.FIGURES, "throughput"),
        (sections.latency.SWITCH, "latency"),
        (sections.pipeline.SECTION.names, "pipeline"),
    ):
        assert set(group) <= set(BY_SECTION[section].names), section
    for figure, _ in sections.pair.FIGURES:
        assert set(sections.pair.ratio_names(figure)) <= set(BY_SECTION["pair"].names)
