"""What the noxfile's sessions share, so that each session there is its decorator, its docstring
and one call: a nox session as a `Runner`, the merge queued after a bench, and the host-side sessions'
bodies (merge, history, confirm, the pages' scripts). `session` is a nox.Session; this module
does not import nox (the package runs without it)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from suite.sessions import containers, pergpu, posargs, push, venv
from suite.sessions.bisect import confirm_session
from suite.sessions.posargs import SelectionCheck
from suite.sessions.runner import Runner, run_suite
from suite.sessions.toolpins import HISTORY_PACKAGES, PAGES_PACKAGES


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
    """A pages script (`suite.report.pages.screenshot`, `.bench`) in Playwright's virtualenv."""
    session.install(*PAGES_PACKAGES)
    run_suite(runner(session), [host_python(session), "-m", module, *session.posargs])
