"""What the nightly workflow does with the history (suite/history/verdict.py, issues.py and
.github/scripts/nightly.py's `history`): each night judged by the gate against the night before
and against stable, the change points and trends for the job summary, and one issue per regressed
cell through a fake `gh`."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support import nightly_script
from support.history import nightly_history

from suite.automation.issues import LABEL, sync_issues
from suite.cli import main
from suite.errors import UsageError
from suite.history.ingest import read_run
from suite.history.store import open_store
from suite.history.verdict import verdict

nightly = nightly_script()
REPO = Path(__file__).resolve().parents[2]
NIGHTS, STEP = 18, 10


@pytest.fixture(scope="module")
def nights(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    """18 nights of stable and a nightly on one GPU; the nightly's compiled ResNet 10% slower from
    night 10 on (its new level held 8 nights: confirmed; at p < 0.0001 the rank test needs about
    that many on each side)."""
    history = nightly_history(NIGHTS, STEP, seed=5)
    root = tmp_path_factory.mktemp("nightly")
    runs = history.write(root / "runs")
    # every night but the last, as earlier workflow runs left them; the last one: by the CLI below
    open_store(root / "h.duckdb").ingest(read_run(runs[:-1]).nights)
    return runs, root / "h.duckdb"


def test_the_verdict_judges_the_night_against_the_night_before_and_stable(
    nights: tuple[list[Path], Path],
) -> None:
    runs, store = nights
    with pytest.raises(UsageError, match="not in the history yet"):
        verdict(runs[-1], store)
    assert main(["history", "ingest", str(runs[-1]), "--store", str(store)]) == 0
    result = verdict(runs[-1], store)
    (stable, nightly_night) = sorted(result.nights, key=lambda v: v.night.build != "stable")
    assert stable.previous.endswith("(2026-12-17)") and stable.against_stable is None
    assert nightly_night.against_previous is not None and nightly_night.against_stable is not None
    assert len(nightly_night.against_previous.changes) == 6 and len(nightly_night.against_stable.changes) == 6
    md = result.markdown
    assert "| nightly-current on NVIDIA H100 80GB HBM3 | synthetic-20261217 (2026-12-17) |" in md
    assert "### Change points of the last 14 days" in md and "| 2026-12-10 | 2026-12-11 |" in md
    assert "### Trends of the 12 series this run measured" in md
    assert set(result.held["metric"]) == {"median_ms", "speedup"}
    assert set(result.held["model"]) == {"ResNet (smoke, random weights)"}
    # held, but not measured again yet: no issue (tests/history/test_history_confirm.py measures it)
    assert result.regressions.empty and "Awaiting a confirmation" in md


def test_one_issue_per_cell_opened_then_told_nothing_twice(nights: tuple[list[Path], Path]) -> None:
    runs, store = nights
    # the last night, as the first test ingests it (idempotent): under xdist this test may run
    # on a worker of its own, with the module's store as the fixture left it
    assert main(["history", "ingest", str(runs[-1]), "--store", str(store)]) == 0
    regressions = verdict(runs[-1], store).held  # as if measured again and confirmed
    calls: list[tuple[list[str], str | None]] = []
    listed: list[dict[str, object]] = []

    def gh(args: list[str], stdin: str | None) -> str:
        calls.append((args, stdin))
        return json.dumps(listed) if args[:2] == ["issue", "list"] else ""

    assert sync_issues(regressions, gh)[0].startswith(
        "opened: Regression: ResNet (smoke, random weights) bs1 default"
    )
    created = [c for c in calls if c[0][:2] == ["issue", "create"]]
    assert len(created) == 1 and created[0][0][4:6] == ["--label", LABEL]
    body = created[0][1] or ""
    assert "<!-- suite-history-cell: " in body and body.count("<!-- suite-history-change: ") == 2
    assert "nox -s bisect -- --cell" in body
    listed.append({"number": 7, "title": "x", "body": body})
    calls.clear()
    assert sync_issues(regressions, gh) == [f"#7 already tells every change of {created[0][0][3]}"]
    assert [c[0][:2] for c in calls] == [["label", "create"], ["issue", "list"]]
    listed[0]["body"] = body.split("<!-- suite-history-change: ")[0]  # as if one change were new
    calls.clear()
    assert sync_issues(regressions, gh)[0].startswith("#7 updated")
    assert [c[0][:3] for c in calls[2:]] == [["issue", "comment", "7"], ["issue", "edit", "7"]]
    assert sync_issues(regressions.iloc[:0], gh) == [
        "no regression confirmed by measuring it again: no issue opened or updated"
    ]


FAKE_GH = """#!{python}
import json, os, sys
stdin = sys.stdin.read() if "-" in sys.argv else None
with open(os.environ["FAKE_GH_LOG"], "a") as fh:
    fh.write(json.dumps({{"args": sys.argv[1:], "stdin": stdin}}) + "\\n")
print("[]" if sys.argv[1:3] == ["issue", "list"] else "")
"""


def test_the_verdict_verb_appends_to_the_summary_and_opens_issues_through_gh(
    nights: tuple[list[Path], Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs, store = nights
    (tmp_path / "bin").mkdir()
    gh = tmp_path / "bin" / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable))
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GH_LOG", str(tmp_path / "gh.log"))
    # the night in the store whatever ran before (xdist splits this module): ingest is idempotent
    assert main(["history", "ingest", str(runs[-1]), "--store", str(store)]) == 0
    summary = tmp_path / "summary.md"
    summary.write_text("## Results\n")
    args = ["history", "verdict", str(runs[-1]), "--store", str(store), "-o", str(summary), "--issues"]
    assert main([*args, "--repo", "me/bench"]) == 0
    assert summary.read_text().startswith("## Results\n## History: the verdict of synthetic-20261218")
    # the regression is held but not measured again: gh is not asked anything (an issue waits for
    # a confirmation: tests/history/test_history_confirm.py, where gh is asked, and fails in one line)
    assert not (tmp_path / "gh.log").exists()


@pytest.mark.parametrize(
    ("url", "extra"),
    [
        ("", []),
        ("s3://bench/history", ["--with", "s3fs"]),
        ("hf://datasets/me/h", ["--with", "huggingface_hub"]),
    ],
)
def test_the_workflow_ingests_then_judges_with_the_store_it_is_given(url: str, extra: list[str]) -> None:
    parts = Path("/parts")
    ingest, judge = nightly.history_commands("results/r1", url, parts, issues=True)
    store = url or "results/history-branch/history"  # the history branch's checkout
    assert ingest == [
        "nox",
        "-s",
        "history",
        "--",
        *extra,
        "ingest",
        "results/r1",
        "--store",
        store,
        "--allow-partial",
    ]
    assert judge == ["nox", "-s", "history", "--", *extra, "verdict", "results/r1", "--store", store, "-o",
                     "/parts/verdict.md", "--slower", "/parts/slower.json", "--issues"]  # fmt: skip
    assert "--issues" not in nightly.history_commands("results/r1", url, parts, issues=False)[1]
