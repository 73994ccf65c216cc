"""What the noxfile's sessions share, so that each session there is its decorator, its docstring
and one call: a nox session as a `Runner`, the merge queued after a bench, and the sessions'
bodies (tests, tests-stable, lint, coverage, gate, merge, history, bisect, confirm, the history's
benchmarks, the pages' scripts). `session` is a nox.Session; this module does not import nox
(the package runs without it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from suite.sessions import containers, pergpu, posargs, push, trust, venv
from suite.sessions.bisect import bisect_session, confirm_session
from suite.sessions.posargs import SelectionCheck
from suite.sessions.runner import Runner, load, run_suite
from suite.sessions.toolpins import CORE_TESTS, HISTORY_PACKAGES, PAGES_PACKAGES


def runner(session: Any) -> Runner:
    """The session as the package sees it; every command it runs is outside nox's virtualenv."""
    return Runner(
        run=lambda *args, **kwargs: session.run(*args, external=True, **kwargs),
        log=lambda message: session.log(message),
        error=lambda message: session.error(message),
    )


def host_python(session: Any) -> str:
    """The Python of the session's own virtualenv."""
    return str(Path(session.bin) / "python")


def bench_done(session: Any, bench: containers.Bench) -> None:
    """Merge what ran; then fail the session (status 1) if a container failed: its cells are
    `error` rows, the other containers' rows are merged."""
    merge_after(session, bench.merge, bench.push)
    if bench.failed:
        session.error(f"{len(bench.failed)} container(s) failed: {'; '.join(bench.failed)}")


def merge_after(session: Any, run_dir: str | None, push_url: str = "") -> None:
    """Queue the merge of the run; an offline run's merge installs nothing; a pushed run's
    merge pushes its tables and plots to the same place."""
    if run_dir is not None:
        offline = "--offline" in session.posargs
        pushed = ["--push", push_url] if push_url else []
        session.notify("merge", posargs=[run_dir, *(["--offline"] if offline else []), *pushed])


def bench_containers(
    session: Any, root: Path, prefix: str, check: SelectionCheck, verb: pergpu.SuiteVerb
) -> None:
    """`nox -s bench-stable` / `bench-nightly`: the containers, then the merge (`check` and
    `verb`: the suite's own verbs in the host's process, which the noxfile gives)."""
    bench = containers.bench_containers(runner(session), session.posargs, root, prefix, check, verb=verb)
    bench_done(session, bench)


def merge(session: Any, root: Path, packages: Sequence[str]) -> None:
    """`nox -s merge`: the tables of a run (`--push URL`: a bench session's, pushed there too)."""
    args = list(session.posargs)
    url = posargs.take(args, values=["--push"])["--push"]
    target = push.open_target(url) if url else None
    venv.merge(runner(session), args, root, Path(session.bin) / "python", session.install)
    if target is not None and args and not args[0].startswith("-"):
        written = push.push(Path(args[0]), target)
        session.log(f"pushed {Path(args[0]).name} to {target.url}: {written} file(s) new or changed")


def take_with(args: list[str]) -> list[str]:
    """The packages of each `--with PKG` (a store's own fsspec package: s3fs, huggingface_hub),
    taken out of `args`."""
    extra = []
    while "--with" in args:
        i = args.index("--with")
        extra.append(args[i + 1] if i + 1 < len(args) else "")
        del args[i : i + 2]
    return [e for e in extra if e]


def history(session: Any) -> None:
    """`nox -s history -- VERB ...`: `python -m suite history` with the history's packages."""
    args = list(session.posargs)
    session.install(*HISTORY_PACKAGES, *take_with(args))
    session.run("python", "-m", "suite", "history", *args)


def confirm(session: Any, root: Path) -> None:
    """`nox -s confirm`: the held regressions measured again (suite.sessions.bisect)."""
    args = list(session.posargs)
    session.install(*HISTORY_PACKAGES, *take_with(args))
    confirm_session(runner(session), args, root, host_python=host_python(session))


def pages_script(session: Any, module: str) -> None:
    """A pages script (`tools.pages.screenshot`, `.bench`) in Playwright's virtualenv."""
    session.install(*PAGES_PACKAGES)
    run_suite(runner(session), [host_python(session), "-m", module, *session.posargs])


def tests(session: Any, root: Path, extras: Sequence[str]) -> None:
    """`nox -s tests`: the current build's torch and pins with the test tools, then pytest."""
    current = load(root).builds["current"]
    # one pip call for torch and the rest; pip byte-compiles what it installs, which a machine
    # with PYTHONDONTWRITEBYTECODE=1 needs (else every test's child process compiles torch's
    # and transformers' modules anew: --no-compile made CI's tests take 16 minutes, not 12)
    pins = [p for p in current.pins if not p.startswith("torch")]
    session.install(f"torch=={current.torch}", *pins, *extras)
    session.install("--no-deps", "-e", ".")
    # three xdist workers on CI's 2 cores: the end-to-end tests wait on their child processes
    # (a hang until its timeout, a runner being killed), and a third worker fills those waits.
    # Tests that share one costly run stay on one worker (tests/conftest.py).
    # `nox -s tests -- -n 0 ...`: one process. The slowest tests are listed at the end, so that
    # CI's log says where its minutes went.
    session.run("pytest", "-n", "3", "--dist", "loadgroup", *(session.posargs or ["-q", "--durations=20"]))


def tests_stable(session: Any, root: Path) -> None:
    """`nox -s tests-stable`: the measuring core's tests in the stable build's virtualenv."""
    run = runner(session)
    python = venv.build_venv(run, load(root).builds["stable"], root)
    run.run(str(python), "-m", "pip", "install", "--quiet", "pytest")
    run.run(str(python), "-m", "pytest", *(session.posargs or ["-q", *CORE_TESTS]))


def lint(session: Any, root: Path, tools: Sequence[str]) -> None:
    """`nox -s lint`: the pinned linters over the code, the Dockerfile and the workflows."""
    session.install(*tools)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports")
    session.run("hadolint", "--config", "containers/hadolint.yaml", "containers/Dockerfile")  # every build's
    session.run("actionlint", *sorted(str(p.relative_to(root)) for p in root.glob(".github/workflows/*.yml")))


def coverage(session: Any, root: Path) -> None:
    """`nox -s coverage`: suite.sessions.trust.coverage, each report logged."""
    for report in trust.coverage(runner(session), session.posargs, root):
        session.log(f"coverage: {report}")


def gate(session: Any, root: Path, packages: Sequence[str]) -> None:
    """`nox -s gate`: the A/A and slowed runs, then `calibrate` in the session's virtualenv."""
    session.install(*packages)
    report = trust.gate(runner(session), session.posargs, root, host_python=host_python(session))
    session.log(f"calibration: {report}")


def pairs(session: Any, root: Path, packages: Sequence[str]) -> None:
    """`nox -s pairs`: the pair's A/A and planted slow-down pairs, each compared (both rules)."""
    session.install(*packages)
    for report in trust.pairs(runner(session), session.posargs, root, host_python=host_python(session)):
        session.log(f"pairs: {report}")


def overlap_aa(session: Any, root: Path, packages: Sequence[str]) -> None:
    """`nox -s overlap-aa`: phases apart and `--overlap` alternating, then `calibrate`."""
    session.install(*packages)
    report = trust.overlap_aa(runner(session), session.posargs, root, host_python=host_python(session))
    session.log(f"overlap A/A: {report} (the overlap runs in the place of its slowed runs)")


def bisect(session: Any, root: Path) -> None:
    """`nox -s bisect`: the first bad nightly of one cell (suite.sessions.bisect)."""
    session.install(*HISTORY_PACKAGES)
    bisect_session(runner(session), session.posargs, root, host_python=host_python(session))


def with_history(session: Any, *args: str) -> None:
    """`python ARGS` (and the session's own arguments) with the history's packages installed."""
    session.install(*HISTORY_PACKAGES)
    session.run("python", *args, *session.posargs)
