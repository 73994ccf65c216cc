"""End to end: the smoke profile on this CPU, all 12 architectures, every row checked, then
merged (in CI every architecture eager and four of them compiled, see tests/support's
SMOKE_PASSES; SUITE_SMOKE_E2E=full: the whole profile).

This is the real pipeline (matrix -> cells -> one worker process per cell -> CSV -> tables),
with the repository's matrix.yaml, in whatever environment pytest runs in: `nox -s tests` (the
current build) and `nox -s tests-stable` (torch 2.0.1 + transformers 4.31). The run is the
session's one smoke run (`smoke_run` in tests/conftest.py, shared by this file's tests);
it takes several minutes on a 2-core machine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support import (
    SMOKE_SCOPE,
    SmokeRun,
    check_latency,
    check_speedup,
    known,
    num,
    smoke_cells,
    smoke_compiled,
    suite_cli,
)
from support.known_failures import SMOKE_ACCURACY_FAILURES, SMOKE_FAILURES

from suite.measure.phases import PHASE_COLUMNS, margin_s
from suite.results import COLUMNS, key_of, read_rows
from suite.spec.warmup import warmup_calls

REPO = Path(__file__).resolve().parents[2]
COMPILED = {"default", "reduce-overhead"}

# The cells known to fail, and how (tests/support/known_failures.py: if one starts to work, the
# test says so and the entry goes).
KNOWN_FAILURES = SMOKE_FAILURES
KNOWN_ACCURACY_FAILURES = SMOKE_ACCURACY_FAILURES


def known_accuracy_failure(row: dict[str, str]) -> bool:
    return known(row, dict.fromkeys(KNOWN_ACCURACY_FAILURES, True)) is True


def known_failure(row: dict[str, str]) -> str | None:
    return known(row, KNOWN_FAILURES)


@pytest.fixture(scope="module")
def smoke(smoke_run: SmokeRun) -> tuple[list[dict[str, str]], str]:
    """The session's smoke run (tests/conftest.py): its rows, and what it printed."""
    (csv_path,) = (smoke_run.folder / "raw").glob("*.csv")
    result = read_rows(csv_path)
    assert result.repaired == 0 and result.skipped == 0
    return result.rows, smoke_run.stderr


def test_one_row_per_cell_for_all_12_architectures(smoke) -> None:
    rows, _ = smoke
    cells = smoke_cells(REPO / "matrix.yaml", rows[0]["build"])
    # ci: every architecture eager, ResNet default and reduce-overhead, 3 more default; full: the profile
    assert len(rows) == len(cells) == {"ci": 12 + 2 + 3, "full": 12 * 2 + 1}[SMOKE_SCOPE]
    assert sorted(key_of(r) for r in rows) == sorted(key_of(c.key_fields("cpu")) for c in cells)
    assert len({key_of(r) for r in rows}) == len(rows), "duplicated rows"
    assert {r["model"] for r in rows} == {c.model.name for c in cells}
    assert all(list(r) == list(COLUMNS) for r in rows)


def test_every_row_is_ok_with_sane_numbers(smoke) -> None:
    rows, _ = smoke
    for r in rows:
        expected = known_failure(r)
        if expected:
            assert (r["status"], r["error"]) == ("error", expected), f"{r['model']} {r['mode']} now: {r}"
    failures = [
        f"{r['model']} {r['mode']}: {r['status']} {r['error']}"
        for r in rows
        if r["status"] != "ok" and not known_failure(r)
    ]
    assert not failures, failures
    for r in rows:
        if known_failure(r):
            continue
        label = f"{r['model']} {r['mode']}"
        assert r["weights"] == "random" and r["variant"] == "smoke" and r["batch_size"] == "1"
        assert int(r["iterations"]) == 10, label
        check_latency(r, label)
        assert r["torch_version"] and r["transformers_version"] and r["python_version"], label


def test_compiled_cells_have_a_paired_speedup_and_pass_accuracy(smoke) -> None:
    rows, _ = smoke
    for r in rows:
        label = f"{r['model']} {r['mode']}"
        if known_failure(r):
            continue
        if r["mode"] in COMPILED:
            check_speedup(r, label)
            if known_accuracy_failure(r):  # NaNs in the compiled outputs: written as such, not empty
                assert r["accuracy"] == "fail", f"{label} now agrees with eager: drop it from the list"
                assert r["max_abs_diff"] in ("nan", "inf"), f"{label}: max abs diff {r['max_abs_diff']!r}"
                continue
            # the float64 rule (docs/accuracy.md): pass, never degenerate (the random weights are
            # scaled to unit variance), with the numbers that decided it
            assert r["accuracy"] == "pass", f"{label}: {r['accuracy']}: {r['accuracy_note']}"
            assert num(r, "max_abs_diff") >= 0, label
            assert r["accuracy_reference"] == "float64 on cpu", label
            assert num(r, "accuracy_spread") > 10 * num(r, "tolerance"), label
            assert num(r, "accuracy_rmse") >= 0 and num(r, "accuracy_rmse_eager") >= 0, label
            assert num(r, "accuracy_multiplier") in (2.0, 3.0), label
            assert r["parity"] == "pass" and r["parity_note"].startswith("compiled against eager"), label
        else:
            assert r["speedup"] == "" and r["accuracy"] == "" and r["compile_s"] == "", label
            assert r["accuracy_reference"] == "" and r["parity"] == "", label
        assert r["weights_init"] == "unit-variance", label


def test_a_compiled_row_says_how_many_compiled_beside_it(smoke) -> None:
    """The run's schedule is `ahead` with `--compile-pool 2` (tests/conftest.py): the ResNet pass's
    two compiled cells compile in one wave of 2, and the next pass's three in a wave of 2 and
    one of 1; each compiled row says its wave's size, an eager row nothing."""
    rows, _ = smoke
    waves = {}
    for r in rows:
        assert r["schedule"] == "ahead", r["model"]
        if r["mode"] in COMPILED and r["compile_s"]:
            waves[f"{r['model']} {r['mode']}"] = int(r["compile_wave"])
        elif r["mode"] == "eager":
            assert r["compile_wave"] == "", r["model"]
    assert set(waves.values()) <= {1, 2} and 2 in waves.values(), waves
    if SMOKE_SCOPE == "ci":
        assert waves["ResNet default"] == waves["ResNet reduce-overhead"] == 2, waves


def test_its_processes_were_forked_from_one_that_imported_torch_once(smoke) -> None:
    """On a CPU `ahead` forks its processes from a zygote (suite.measure.zygote): every row says
    so, each pass's run says the zygote's start-up once, and a forked cell's time to its first
    eager result still counts that start-up (as a fresh process would pay it)."""
    rows, stderr = smoke
    assert {r["process_start"] for r in rows} == {"fork"}
    said = [line for line in stderr.splitlines() if line.startswith("fork server:")]
    assert said and all("imported once in" in line for line in said), said
    startup = min(float(line.split(" in ")[1].split(" s ")[0]) for line in said)
    assert all(num(r, "eager_first_result_s") > startup for r in rows if r["status"] == "ok")


def test_progress_is_shown(smoke) -> None:
    _, stderr = smoke
    passes = {"ci": ("[3/3]", "[6/6]", "[12/12]"), "full": ("[25/25]",)}[SMOKE_SCOPE]
    assert all(p in stderr for p in passes) and "ETA" in stderr and "elapsed" in stderr


def test_the_warmup_column_holds_the_calls_that_ran(smoke) -> None:
    """Not the setting (2 in the smoke profile): a compiled function gets at least 3 calls."""
    rows, _ = smoke
    (setting,) = {c.settings.warmup for c in smoke_cells(REPO / "matrix.yaml", "x")}
    for r in rows:
        label = f"{r['model']} {r['mode']}"
        if r["status"] != "ok":
            assert r["warmup"] == "", label
            continue
        assert int(r["warmup"]) == warmup_calls(setting, compiled=r["mode"] != "eager"), label
    assert {r["warmup"] for r in rows if r["mode"] in COMPILED and r["status"] == "ok"} == {"3"}


def test_the_run_merges_into_one_row_per_architecture_and_mode(smoke, smoke_run: SmokeRun, tmp_path) -> None:
    """`suite merge` of a real run (tests/report/test_publish.py merges hand-made rows): a compile-vs-eager
    table per compiled mode, one row per architecture, with the row's paired speed-up."""
    pytest.importorskip("pandas", reason="merge is host-side (nox -s tests-stable has no pandas)")
    rows, _ = smoke
    proc = suite_cli("merge", str(smoke_run.folder), "-o", str(tmp_path), "--no-plots")
    assert proc.returncode == 0, proc.stderr
    for mode in sorted(COMPILED):
        (table,) = (tmp_path / "tables").glob(f"compile-vs-eager__*__bs1__{mode}.md")
        lines = {
            line.split(" | ")[0].removeprefix("| "): line
            for line in table.read_text().splitlines()
            if line.startswith("| ") and not line.startswith("| Task/Model ")
        }
        compiled = {f"{r['task']}/{r['model']}": r for r in rows if r["mode"] == mode}
        every = {f"{r['task']}/{r['model']}" for r in rows}
        assert sorted(lines) == sorted(every) and len(lines) == 12, table.name
        assert len(compiled) == smoke_compiled(mode)
        for name, r in compiled.items():
            expected = "| error |" if known_failure(r) else f" · {float(r['speedup']):.2f}x ["
            assert expected in lines[name], f"{table.name}: {lines[name]}"
        for name in every - set(compiled):  # an architecture not compiled in this mode (CI's scope)
            line = lines[name]
            assert "‡" in line and line.endswith(" | — | — | — | — |"), f"{table.name}: {line}"
    index = (tmp_path / "tables" / "tables.md").read_text()
    assert "## Summary" in index and "## Compile vs eager" in index
    # the run page beside it (tests/report/test_pages_browser.py opens one): every architecture
    page = (tmp_path / "tables" / "index.html").read_text(encoding="utf-8")
    assert all(f'"model":"{r["model"]}"' in page for r in rows)


def test_a_reduce_overhead_row_without_cuda_graphs_says_so(smoke) -> None:
    """On a CPU inductor captures no CUDA graph, so a reduce-overhead row's figures are
    default mode's; its compile_note says so (where the build counts the skips: torch 2.1 on),
    and a default row never does. On a GPU the same note marks a graph inductor would not capture."""
    rows, _ = smoke
    ok = [r for r in rows if r["status"] == "ok" and r["mode"] in COMPILED]
    for r in ok:
        noted = "CUDA graphs skipped: " in r["compile_note"]
        if r["mode"] == "default":
            assert not noted, r["compile_note"]
        elif not r["torch_version"].startswith("2.0."):
            assert noted, f"{r['model']} {r['mode']}: {r['compile_note']!r}"


def test_compile_phases_add_up_to_compile_s_within_the_margin(smoke) -> None:
    """Compile phases on the real run: every compiled row's phases (torch's own accounting) and
    `phase_other_s` add up to compile_s, |other| within the stated margin; on a CPU the CUDA-graph
    figures are empty with their reason, and so is energy where no RAPL counter is readable."""
    rows, _ = smoke
    for r in (r for r in rows if r["status"] == "ok"):
        label = f"{r['model']} {r['mode']}"
        assert r["energy_source"] or r["energy_note"].startswith(("no RAPL", "off")), label
        if r["mode"] == "eager":
            assert all(r[c] == "" for c in (*PHASE_COLUMNS, "phase_other_s", "graphs")), label
            continue
        compile_s, other = num(r, "compile_s"), num(r, "phase_other_s")
        total = sum(num(r, c) for c in PHASE_COLUMNS if r[c] != "")
        assert abs(compile_s - total - other) < 1e-3, label
        assert abs(other) <= margin_s(compile_s), f"{label}: {total:.2f} s of {compile_s:.2f} s"
        note = r["phase_note"]
        assert r["phase_cudagraphs_s"] == "" and "cudagraphs: no CUDA graphs (on cpu)" in note, label
        assert int(r["graphs"]) >= 1 and (r["guards"] != "" or "keeps no guard count" in note), label
        assert r["cudagraph_note"] == "no CUDA graphs on cpu" and r["cudagraph_records"] == "", label
