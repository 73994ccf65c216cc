"""Bisect (suite/history/bisect.py, judge.py, suite/sessions/bisect.py): the dates it tries and its
stopping rule, exactly; then the session for real against a fake `docker` (which writes the one
cell's row, slower from a known nightly on) and a fake nightly index on the loopback."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import io
import json
import threading
from collections.abc import Iterator, Sequence
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from support.docker import make_fake

from suite.benchmarks.synth import Build, History, Step, template_rows
from suite.cli import main
from suite.errors import UsageError
from suite.history.bisect import BAD, GOOD, SKIP, Bisection, Cell, Judged, bisect
from suite.history.calibrate import TRUST, noise_pool
from suite.history.ingest import read_run
from suite.history.judge import judge_runs
from suite.history.store import open_store
from suite.sessions.bisect import bisect_session, confirm_session
from suite.sessions.runner import Runner

ROOT = Path(__file__).resolve().parents[2]
DEC = [date(2026, 12, d) for d in range(1, 21) if d != 5]  # the index lost the 5th


def d(day: int) -> date:
    return date(2026, 12, day)


def fake_search(first_bad: date, skip: frozenset[date] = frozenset()) -> tuple[list[date], object]:
    tried: list[date] = []

    def measure(day: date) -> Path | None:
        tried.append(day)
        return None if day in skip else Path(str(day))

    def judge(good: Path, run: Path | None) -> Judged:
        if run is None:
            return Judged(SKIP, "did not run")
        return (
            Judged(BAD, "regression")
            if date.fromisoformat(run.name) >= first_bad
            else Judged(GOOD, "unchanged")
        )

    return tried, (measure, judge)


def test_the_dates_tried_and_the_stopping_rule() -> None:
    tried, (measure, judge) = fake_search(d(13))
    result = bisect(DEC, d(1), d(20), measure, judge, lambda _: None)
    # 17 dates between (the 5th is not on the index): the middle, then the middle of what is left
    assert tried == [d(1), d(20), d(11), d(15), d(13), d(12)]
    assert (result.reproduced, result.last_good, result.first_bad) == (True, d(12), d(13))
    assert len(tried) - 2 <= Bisection(DEC, d(1), d(20)).most_runs() == 5


def test_a_date_that_does_not_run_is_skipped_and_the_search_goes_on() -> None:
    tried, (measure, judge) = fake_search(d(13), skip=frozenset({d(15)}))
    result = bisect(DEC, d(1), d(20), measure, judge, lambda _: None)
    assert tried == [d(1), d(20), d(11), d(15), d(16), d(13), d(12)]
    assert (result.last_good, result.first_bad) == (d(12), d(13))
    assert result.judged[d(15)].outcome == SKIP


def test_adjacent_nightlies_and_a_regression_that_does_not_reproduce() -> None:
    tried, (measure, judge) = fake_search(d(4))
    result = bisect(DEC, d(3), d(4), measure, judge, lambda _: None)
    assert tried == [d(3), d(4)] and (result.last_good, result.first_bad) == (d(3), d(4))
    tried, (measure, judge) = fake_search(d(30))
    result = bisect(DEC, d(1), d(20), measure, judge, lambda _: None)
    assert tried == [d(1), d(20)] and not result.reproduced
    assert result.lines(Cell("ResNet", 4, "default"), "nightly-current")[0].startswith("not reproduced")


@pytest.mark.parametrize(
    ("good", "bad", "message"),
    [(d(5), d(20), "--good: 2026-12-05 is not on the nightly index"), (d(9), d(2), "must be before --bad")],
)
def test_dates_off_the_index_or_in_the_wrong_order_are_refused(good: date, bad: date, message: str) -> None:
    _, (measure, judge) = fake_search(d(13))
    with pytest.raises(UsageError, match=message):
        bisect(DEC, good, bad, measure, judge, lambda _: None)
    with pytest.raises(UsageError, match="is not"):
        Cell.parse("ResNet,four,default")


# --- the session, against a fake docker and a fake index ---------------------------------------

FAKE_RUN = r"""
import csv, hashlib, json, os, sys
sys.path.insert(0, {root!r})
from suite.results import COLUMNS
args = sys.argv[1:]
state = os.environ["FAKE_DOCKER_LOG"] + ".dates"
dates = json.load(open(state)) if os.path.exists(state) else {{}}
if args[:1] == ["build"]:
    day = next(a.split("=", 1)[1] for a in args if a.startswith("TORCH_NIGHTLY_DATE="))
    if day in os.environ.get("FAKE_BROKEN_DATES", "").split(","):
        print("ERROR: no torch wheel for " + day, file=sys.stderr); sys.exit(1)
    dates[args[args.index("--tag") + 1]] = day
    json.dump(dates, open(state, "w"))
elif args[:1] == ["run"] and "suite" in args:
    mount = next(a for a in args if a.startswith("type=bind,source=") and "/results/" in a)
    run_dir = mount.split("source=", 1)[1].split(",", 1)[0]
    image = next(a for a in args if a.startswith("torch-compile-suite:"))
    day = dates[image]
    flag = lambda f: args[args.index(f) + 1]
    slow = 1.2 if day >= os.environ["FAKE_FIRST_BAD"] else 1.0
    version = "2.15.0.dev" + day + "+cu130"
    row = dict.fromkeys(COLUMNS, "")
    row.update(run_id=flag("--run-id"), build=flag("--build"), device="cpu", gpu_name="fake",
               task="Image Classification", model=flag("--models"), model_id="x", weights="random",
               batch_size=flag("--batch-sizes"), mode=flag("--modes"), dtype="float32", scenario="inference",
               status="ok", iterations="100", mean_ms=str(10 * slow), median_ms=str(10 * slow),
               ci95_low_ms=str(9.9 * slow), ci95_high_ms=str(10.1 * slow), eager_median_ms="15",
               speedup=str(1.5 / slow), speedup_ci95_low=str(1.49 / slow), speedup_ci95_high=str(1.51 / slow),
               compile_s="20", accuracy="pass", torch_version=version,
               torch_git=hashlib.sha1(version.encode()).hexdigest(), started_at="2026-12-21T00:00:00+00:00",
               health="ok")
    os.makedirs(run_dir + "/raw", exist_ok=True)
    with open(run_dir + "/raw/nightly-current__cpu.csv", "w", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n"); w.writerow(COLUMNS); w.writerow([row[c] for c in COLUMNS])
"""


def _wheel(name: str, line: str, day: date) -> str:
    return f"{name}-{line}.dev{day:%Y%m%d}%2Bcu130-cp311-cp311-manylinux_2_28_x86_64.whl"


@pytest.fixture
def index(tmp_path: Path) -> Iterator[str]:
    """The fake nightly index: torch and torchvision wheels of every date of DEC."""
    root = tmp_path / "index"
    for name, line in (("torch", "2.15.0"), ("torchvision", "0.30.0")):
        (root / name).mkdir(parents=True)
        links = "".join(
            f'<a href="/{_wheel(name, line, day)}#sha256={"0" * 64}">{_wheel(name, line, day)}</a>\n'
            for day in DEC
        )
        (root / name / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    handler.log_message = lambda *a: None  # type: ignore[attr-defined]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_bad: str, broken: str = "") -> Any:
    """The fake docker, which also writes the one cell's row for `run` (20% slower from the nightly
    `first_bad` on) and fails to build the nightlies `broken`."""
    fake = make_fake(tmp_path)
    docker = fake.bin / "docker"
    real = docker.read_text()
    # the stand-in's own answers, and before them a row written for `run` and a date kept per image
    docker.write_text(
        real.replace(
            "args = sys.argv[1:]\n",
            "args = sys.argv[1:]\n" + FAKE_RUN.format(root=str(ROOT)).replace("args = sys.argv[1:]\n", ""),
            1,
        )
    )
    for key, value in {**fake.env, "FAKE_FIRST_BAD": first_bad, "FAKE_BROKEN_DATES": broken}.items():
        monkeypatch.setenv(key, value)
    return fake


def test_the_session_builds_each_date_runs_the_cell_and_names_the_first_bad_nightly(
    tmp_path: Path, index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = fake_docker(tmp_path, monkeypatch, "20261213", "20261212")
    logged: list[str] = []

    def error(message: str) -> None:
        raise AssertionError(message)

    runner = Runner(run=lambda *a, **k: None, log=logged.append, error=error)  # type: ignore[arg-type]
    args = ["--cell", "ResNet,4,default", "--good", "2026-12-10", "--bad", "20261214", "--device", "cpu"]
    args += ["--index", index, "--out", str(fake.out)]
    cell = Cell("ResNet", 4, "default")
    result = bisect_session(runner, args, ROOT, judge=lambda good, run: judge_runs(good, run, cell))
    # 11, 12, 13 between: 12 first, whose image does not build (skipped), then 11, then 13
    assert result.order == [d(10), d(14), d(12), d(11), d(13)]
    assert (result.last_good, result.first_bad) == (d(11), d(13))
    assert result.judged[d(12)].outcome == SKIP and result.judged[d(13)].verdict == "less speed-up"
    assert any(line.endswith("or one of 2026-12-12, which could not be judged") for line in logged)
    good, bad = (hashlib.sha1(f"2.15.0.dev202612{x}+cu130".encode()).hexdigest() for x in ("11", "13"))
    assert f"commits: https://github.com/pytorch/pytorch/compare/{good}...{bad}" in logged
    calls = [json.loads(line) for line in Path(fake.env["FAKE_DOCKER_LOG"]).read_text().splitlines()]
    built = [next(x for x in a if x.startswith("TORCH_NIGHTLY_DATE=")) for a in calls if a[:1] == ["build"]]
    assert built == [f"TORCH_NIGHTLY_DATE={day:%Y%m%d}" for day in result.order if day != d(12)]
    runs = [a for a in calls if a[:1] == ["run"]]
    assert len(runs) == 4 and all(
        a[a.index("--models") + 1 : a.index("--models") + 2] == ["ResNet"] for a in runs
    )
    assert (fake.out / "bisect-resnet-bs4-default-20261213" / "raw").is_dir()


# --- `nox -s confirm`: a held regression's two nightlies measured again -------------------------


def test_the_confirm_session_measures_both_nightlies_back_to_back_and_keeps_the_verdict(
    tmp_path: Path, index: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A nightly history on the fake machine's name (ResNet's compiled cell 20% slower from the
    nightly of 2026-12-11 on); the session lists it, builds both nightlies, runs the cell in each,
    one after the other, and `history confirm` keeps an agreeing verdict: nothing awaits after."""
    template = template_rows(
        ROOT / TRUST / "gate" / "aa" / "rep-1" / "raw" / "current__cpu.csv",
        models=("ResNet",),
        modes=("default",),
    )
    history = History(
        template,
        [Build("nightly-current", "2.15.0.dev{date}+cu130")],
        [("cpu", "fake")],
        d(1),
        18,
        noise_pool([ROOT / TRUST / "gate" / "aa"]).deviations,
        steps=[Step(10, 1.2)],
        seed=2,
    )
    store = tmp_path / "h.duckdb"
    open_store(store).ingest(read_run(history.write(tmp_path / "runs")).nights)
    fake = fake_docker(tmp_path, monkeypatch, "20261211")

    def host(args: Sequence[str]) -> str:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["history", *args]) == 0
        return out.getvalue()

    logged: list[str] = []
    runner = Runner(run=lambda *a, **k: None, log=logged.append, error=lambda m: None)  # type: ignore[arg-type]
    # each night's wheels are resolved from the index (a local one: no network)
    args = ["--store", str(store), "--device", "cpu", "--out", str(fake.out), "--index", index]
    assert confirm_session(runner, [*args, "--gpu", "NVIDIA H100 80GB HBM3"], ROOT, host=host) == []
    lines = confirm_session(runner, [*args, "--gpu", "cpu: fake"], ROOT, host=host)
    assert len(lines) == 1 and "2026-12-10 against 2026-12-11" in lines[0] and "(bad)" in lines[0]
    calls = [json.loads(line) for line in Path(fake.env["FAKE_DOCKER_LOG"]).read_text().splitlines()]
    kinds = [
        (a[0], next((x for x in a if x.startswith("TORCH_NIGHTLY_DATE=")), ""))
        for a in calls
        if a[0] in ("build", "run")
    ]
    # both images built first, then the two runs back to back
    assert kinds == [
        ("build", "TORCH_NIGHTLY_DATE=20261210"),
        ("build", "TORCH_NIGHTLY_DATE=20261211"),
        ("run", ""),
        ("run", ""),
    ]
    assert host(["confirm", "--list", "--store", str(store)]) == ""
    assert (
        confirm_session(runner, args, ROOT, host=host) == []
        and logged[-1] == "no change point awaits a confirmation"
    )
