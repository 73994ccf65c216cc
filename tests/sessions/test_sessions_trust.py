"""The benchmark sessions that check the suite's own figures (suite.sessions.trust, noxfile's
`crosscheck`, `repeat`, `gate`), without nox and without building a virtualenv: the commands
they run, in order, with their defaults first so that `-- ARGS` override them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from suite.sessions import trust
from suite.sessions.runner import Runner

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[str], dict[str, str]]]:
    calls: list[tuple[list[str], dict[str, str]]] = []

    def run_suite(runner: Runner, cmd: list[str], extra_env: Any = None) -> None:
        calls.append((cmd, dict(extra_env or {})))
        if "repeat" in cmd and "--out" in cmd:  # what `suite repeat` leaves behind
            out, run_id = Path(cmd[cmd.index("--out") + 1]), cmd[cmd.index("--run-id") + 1]
            for i in (1, 2):
                (out / run_id / f"rep-{i}").mkdir(parents=True, exist_ok=True)

    monkeypatch.setattr(trust, "run_suite", run_suite)
    monkeypatch.setattr(trust, "build_venv", lambda runner, build, root: Path(f"/venvs/{build.name}/python"))
    return calls


def _runner() -> Runner:
    def error(message: str):  # type: ignore[no-untyped-def]
        raise AssertionError(message)

    return Runner(run=lambda *a, **k: None, log=lambda m: None, error=error)


def test_crosscheck_runs_the_full_size_models_in_the_builds_venv(ran) -> None:
    trust.crosscheck(_runner(), ["--iterations", "20"], ROOT)
    ((cmd, env),) = ran
    assert cmd[:6] == ["/venvs/current/python", "-m", "suite", "crosscheck", "--build", "current"]
    assert cmd[6:] == [*trust.CROSSCHECK, "--iterations", "20"]  # the user's flags last: they win
    assert "ResNet,ViT" in cmd and "full" in cmd and env == {}


def test_repeat_and_another_build(ran) -> None:
    trust.repeat(_runner(), ["--build", "stable"], ROOT)
    ((cmd, _),) = ran
    assert cmd[:6] == ["/venvs/stable/python", "-m", "suite", "repeat", "--build", "stable"]
    assert cmd[6:] == trust.REPEAT


def test_gate_runs_aa_then_slowed_then_calibrates(ran, tmp_path: Path) -> None:
    report = trust.gate(_runner(), ["--run-id", "g", "--out", str(tmp_path)], ROOT, host_python="hostpy")
    (aa, aa_env), (slowed, slowed_env), (cal, _) = ran
    assert aa_env == {} and slowed_env == {"SUITE_FAULT": "slow:1.2"}
    # the cell's own compile_s is what compare judges: no warm and mega-cache processes
    assert "--no-compile-cost" in aa and "--no-compile-cost" in slowed
    assert aa[aa.index("--run-id") + 1] == "g" and slowed[slowed.index("--run-id") + 1] == "g-slowed"
    assert cal[:4] == ["hostpy", "-m", "suite", "calibrate"]
    assert cal[cal.index("--aa") + 1 : cal.index("--slowed")] == [
        str(tmp_path / "g" / f"rep-{i}") for i in (1, 2)
    ]
    assert report == tmp_path / "g" / "calibration.md"


def test_coverage_repeats_the_cells_with_one_process_then_three(ran, tmp_path: Path) -> None:
    """The rerun intervals' coverage session: a benchmark (nox -s coverage), one repeat per k."""
    reports = trust.coverage(_runner(), ["--run-id", "c", "--out", str(tmp_path), "--models", "ResNet"], ROOT)
    (one, _), (three, _) = ran
    for cmd, k in ((one, "1"), (three, "3")):
        assert cmd[cmd.index("--processes") + 1] == k and cmd[cmd.index("--times") + 1] == "11"
        assert cmd[cmd.index("--hold-out") + 1] == "1" and "--no-compile-cost" in cmd
        assert cmd[-2:] == ["--models", "ResNet"]  # the user's flags last: they win
    assert reports == [tmp_path / "c-k1" / "repeat.md", tmp_path / "c-k3" / "repeat.md"]


def test_overlap_aa_alternates_apart_and_overlap_then_calibrates(ran, tmp_path: Path) -> None:
    """Phases apart, then --overlap, pair after pair, the same cells in waves of one; calibrate
    takes the apart runs as its A/A and the overlap runs in the place of its slowed ones."""
    args = ["--run-id", "o", "--out", str(tmp_path), "--pairs", "2"]
    report = trust.overlap_aa(_runner(), args, ROOT, host_python="hostpy")
    *runs, (cal, _) = ran
    ids = [cmd[cmd.index("--run-id") + 1] for cmd, _ in runs]
    assert ids == ["o-apart-1", "o-overlap-1", "o-apart-2", "o-overlap-2"]
    assert all(("--overlap" in cmd) == ("overlap" in i) for (cmd, _), i in zip(runs, ids, strict=True))
    # the apart runs pin their timed processes as the overlap does: the compiles beside differ alone
    assert all(("--pin-timing" in cmd) == ("apart" in i) for (cmd, _), i in zip(runs, ids, strict=True))
    assert all("--compile-pool" in cmd and cmd[3] == "run" for cmd, _ in runs)
    assert cal[cal.index("--aa") + 1 : cal.index("--slowed")] == [
        str(tmp_path / f"o-apart-{i}") for i in (1, 2)
    ]
    assert cal[cal.index("--slowed") + 1 : cal.index("-o")] == [
        str(tmp_path / f"o-overlap-{i}") for i in (1, 2)
    ]
    assert report == tmp_path / "o-calibration.md"
