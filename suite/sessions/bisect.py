"""`nox -s bisect -- --cell "<model>,<batch>,<mode>" --good DATE --bad DATE`: the first bad nightly
of one cell (the search: suite.history.bisect).

For each date it tries, the nightly build's image is built with that date's torch (the images'
own machinery: `TORCH_NIGHTLY_DATE` set to the date, so the tag is the date's own and a date tried
twice is built once) and the one cell runs in it, as `bench-nightly` runs a cell (`suite run` in
the container, the chosen profile's settings). Each run is judged by the gate's rule in the host
Python, which has pandas (`python -m suite history judge`). The dates come from the build's
nightly index (containers/nightly_pin.py, which the images run too).

Flags: --cell, --good, --bad (YYYY-MM-DD or YYYYMMDD), --build (a nightly build pinned by
TORCH_NIGHTLY_DATE; default nightly-current), --profile (full), --device (cuda|cpu), --threshold,
--out (results), --local-bases, --index URL (a mirror of the build's nightly index, which the
images then install from too).

`nox -s confirm -- [--store URL] [--gpu NAME] [--change ID] [--device cuda|cpu] [--profile full]
[--threshold T] [--out DIR] [--index URL] [--local-bases] [--issues [--repo OWNER/NAME]]`: a held
regression's last good and first bad nightly measured again, back to back, before an issue is
opened (suite.history.confirm judges and keeps it): the same images and the same `suite run`.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.history.bisect import SKIP, Cell, Judged, Result, bisect
from suite.results import slug
from suite.sessions import docker, host, imagebuild, images, nightly
from suite.sessions.posargs import refuse_rest, take
from suite.sessions.runner import Runner, load
from suite.spec import BuildSpec, Matrix

DEFAULT_BUILD = "nightly-current"


def index_dates(build: BuildSpec, root: Path) -> list[date]:
    """The dates with both a torch and a torchvision nightly on the build's index."""
    pin = nightly.nightly_pin(root)
    try:  # any torch line: the nightly's line moves on inside a bisect's range too
        torch, vision = (pin.links(build.index_url, n, build.python) for n in ("torch", "torchvision"))
        both = {t.date for t in torch} & {v.date for v in vision}
    except pin.PinError as exc:
        raise UsageError(f"builds.{build.name}.index_url", str(exc)) from None
    return sorted(datetime.strptime(d, "%Y%m%d").date() for d in both)


def parse_day(flag: str, text: str | None) -> date:
    if not text:
        raise UsageError(flag, "required (a nightly date, YYYY-MM-DD)")
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    raise UsageError(flag, f"{text!r} is not a date like 2026-12-03")


class _NotRun(Exception):
    pass


@dataclass(frozen=True)
class Images:
    """Where a nightly's image comes from: the matrix and its build, the checkout, the bases."""

    matrix: Matrix
    build: BuildSpec
    root: Path
    subs: images.Substitutes


def container_measure(
    runner: Runner, source: Images, cell: Cell, suite_args: Sequence[str], device: str, out: Path
) -> Callable[[date], Path | None]:
    """A date -> the run folder of the cell run in that date's image (None: not built, not run)."""
    matrix, build, root, subs = source.matrix, source.build, source.root, source.subs
    hf_cache = host.hf_cache_dir().resolve()

    def error(message: str) -> None:
        raise _NotRun(message)

    quiet = Runner(run=runner.run, log=runner.log, error=error)  # type: ignore[arg-type]

    def measure(day: date) -> Path | None:
        spec = replace(build, build_args={**build.build_args, "TORCH_NIGHTLY_DATE": f"{day:%Y%m%d}"})
        run_id = f"bisect-{slug(cell.label)}-{day:%Y%m%d}"
        opts = docker.run_options(out.resolve(), run_id, hf_cache, False, device, "")
        try:
            tag = imagebuild.ensure_image(quiet, matrix, spec, root, imagebuild.Build(subs=subs))
            host.prepare_mounts(quiet, opts)
            args = ["--models", cell.model, "--batch-sizes", str(cell.batch_size), "--modes", cell.mode]
            cmd = docker.suite_run_command(spec, opts, tag, [*suite_args, *args])
            if host.run_docker(cmd, quiet).returncode != 0:
                raise _NotRun("the container exited with an error")
        except (_NotRun, docker.DockerProblem, UsageError) as exc:  # UsageError: that night's wheels
            runner.log(f"{day}: not run ({exc}); skipped")
            return None
        return out / run_id

    return measure


def host_judge(host_python: str, cell: Cell, threshold: str | None) -> Callable[[Path, Path | None], Judged]:
    """The gate's verdict from the host Python (`python -m suite history judge`, one JSON line)."""

    def judge(good: Path, run: Path | None) -> Judged:
        if run is None:
            return Judged(SKIP, "did not run")
        cmd = [host_python, "-m", "suite", "history", "judge", str(good), str(run), "--cell", cell.text]
        cmd += ["--threshold", threshold] if threshold else []
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            raise UsageError("history judge", (proc.stderr.strip().splitlines() or ["failed"])[-1])
        return Judged.from_json(proc.stdout)

    return judge


# The session's flags with a value (posargs.take); `--local-bases` is its one switch.
VALUE_FLAGS = (
    "--cell",
    "--good",
    "--bad",
    "--build",
    "--profile",
    "--device",
    "--threshold",
    "--out",
    "--index",
)


def bisect_session(
    runner: Runner,
    posargs: Sequence[str],
    root: Path,
    host_python: str = sys.executable,
    judge: Callable[[Path, Path | None], Judged] | None = None,
) -> Result:
    """Parse the flags, check docker (and the GPU), search; print the first bad date and its commits."""
    args = list(posargs)
    flags = take(args, values=list(VALUE_FLAGS), switches=["--local-bases"])
    refuse_rest(args, "bisect", ", ".join((*VALUE_FLAGS, "--local-bases")))
    cell = Cell.parse(flags["--cell"] or "")
    good, bad = parse_day("--good", flags["--good"]), parse_day("--bad", flags["--bad"])
    name = flags["--build"] or DEFAULT_BUILD
    profile = flags["--profile"] or "full"
    device = flags["--device"] or "cuda"
    threshold = flags["--threshold"]
    out = Path(flags["--out"] or root / "results")
    index = flags["--index"]
    subs = images.Substitutes(local_bases=flags["--local-bases"])
    matrix = load(root)
    build = matrix.builds.get(name)
    if build is None or build.kind != "nightly" or "TORCH_NIGHTLY_DATE" not in build.build_args:
        raise UsageError(
            "--build", f"{name!r} is not a nightly build of matrix.yaml pinned by TORCH_NIGHTLY_DATE"
        )
    if index:  # a mirror of the nightly index (the images install from it too)
        build = replace(build, index_url=index)
    if device not in docker.DEVICES:
        raise UsageError("--device", f"{device!r}: cuda or cpu")
    docker.check_docker()
    if device == "cuda":
        docker.check_gpu()
    source = Images(matrix, build, root, subs)
    measure = container_measure(runner, source, cell, ["--profile", profile], device, out)
    result = bisect(
        index_dates(build, root),
        good,
        bad,
        measure,
        judge or host_judge(host_python, cell, threshold),
        runner.log,
    )
    for line in result.lines(cell, build.name):
        runner.log(line)
    return result


# --- `nox -s confirm`: a change point's two nightlies measured again, back to back ----------------

Host = Callable[[Sequence[str]], str]  # `python -m suite history ARGS...` in the host Python -> stdout


def host_history(host_python: str) -> Host:
    """`python -m suite history ...` in the host Python (it has pandas and DuckDB); its failure is
    one line."""

    def run(args: Sequence[str]) -> str:
        proc = subprocess.run(
            [host_python, "-m", "suite", "history", *args], capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            raise UsageError(f"history {args[0]}", (proc.stderr.strip().splitlines() or ["failed"])[-1])
        return proc.stdout

    return run


CONFIRM_VALUES = (
    "--store", "--change", "--gpu", "--profile", "--device", "--threshold", "--out", "--index", "--repo",
)  # fmt: skip


def confirm_session(
    runner: Runner,
    posargs: Sequence[str],
    root: Path,
    host_python: str = sys.executable,
    host: Host | None = None,
) -> list[str]:
    """Each held regression awaiting a confirmation (`history confirm --list`; `--gpu NAME`: those
    found on that GPU; `--change ID`: that one): both nightlies' images built, then the cell run in
    each, back to back, and the two runs judged and kept by `history confirm` (which opens the
    issues with `--issues`). Its lines."""
    args = list(posargs)
    flags = take(args, values=list(CONFIRM_VALUES), switches=["--local-bases", "--issues"])
    refuse_rest(args, "confirm", ", ".join([*CONFIRM_VALUES, "--local-bases", "--issues"]))
    ask = host or host_history(host_python)
    store = ["--store", flags["--store"]] if flags["--store"] else []
    device = flags["--device"] or "cuda"
    if device not in docker.DEVICES:
        raise UsageError("--device", f"{device!r}: cuda or cpu")
    pending = _pending(ask, flags, store)
    if not pending:
        runner.log("no change point awaits a confirmation")
        return []
    docker.check_docker()
    if device == "cuda":
        docker.check_gpu()
    matrix = load(root)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%S")
    lines: list[str] = []
    failed: list[str] = []
    for item in pending:
        build = matrix.builds.get(item["build"])
        if build is None or "TORCH_NIGHTLY_DATE" not in build.build_args:
            lines.append(f"change {item['change']}: {item['build']} is not a nightly build of matrix.yaml "
                         "pinned by TORCH_NIGHTLY_DATE: it cannot be measured again here")  # fmt: skip
            runner.log(lines[-1])
            continue
        if flags["--index"]:
            build = replace(build, index_url=flags["--index"])
        try:
            lines.append(_confirm_one(runner, ask, item, _Where(matrix, build, root, flags, stamp, store)))
        except UsageError as exc:  # this change's runs refused (another GPU, another nightly): the next
            failed.append(f"change {item['change']}: not confirmed ({exc})")
            runner.log(failed[-1])
    if failed:  # the others are measured and kept; the session still fails, in one line
        raise UsageError(
            "confirm", f"{len(failed)} of {len(pending)} change(s) could not be judged: {failed[0]}"
        )
    return lines


def _pending(ask: Host, flags: dict[str, Any], store: list[str]) -> list[dict[str, str]]:
    """The changes awaiting a confirmation, narrowed by `--gpu` and `--change`."""
    pending = [json.loads(line) for line in ask(["confirm", "--list", *store]).splitlines() if line.strip()]
    if flags["--gpu"]:  # this machine's GPU (as the history names it): the changes found on it
        pending = [p for p in pending if p["gpu"] == flags["--gpu"]]
    if flags["--change"]:
        pending = [p for p in pending if p["change"] == flags["--change"]]
        if not pending:
            raise UsageError("--change", f"{flags['--change']!r} is not awaiting a confirmation")
    return pending


def quiet(runner: Runner) -> Runner:
    """The runner whose error is an exception of this module's (a nightly that does not build or
    run is told and skipped, not the session's end)."""

    def error(message: str) -> None:
        raise _NotRun(message)

    return Runner(run=runner.run, log=runner.log, error=error)  # type: ignore[arg-type]


@dataclass(frozen=True)
class _Where:
    """What every confirmation of one session shares."""

    matrix: Matrix
    build: BuildSpec
    root: Path
    flags: dict[str, Any]
    stamp: str
    store: list[str]


def _confirm_one(runner: Runner, ask: Host, item: dict[str, str], where: _Where) -> str:
    """One pair of nightlies: both images built first (so the runs follow each other), then good,
    then bad, then `history confirm` on the two runs."""
    flags = where.flags
    cell = Cell.parse(item["cell"])
    out = Path(flags["--out"] or where.root / "results") / f"confirm-{item['change']}-{where.stamp}"
    subs = images.Substitutes(local_bases=flags["--local-bases"])
    suite_args = ["--profile", flags["--profile"] or "full", "--scenarios", item["scenario"]]
    device = flags["--device"] or "cuda"
    source = Images(where.matrix, where.build, where.root, subs)
    measure = container_measure(runner, source, cell, suite_args, device, out)
    days = [parse_day("good", item["good"]), parse_day("bad", item["bad"])]
    for day in days:  # built (or found) first: the two runs then follow each other
        spec = replace(
            where.build, build_args={**where.build.build_args, "TORCH_NIGHTLY_DATE": f"{day:%Y%m%d}"}
        )
        try:
            imagebuild.ensure_image(
                quiet(runner), where.matrix, spec, where.root, imagebuild.Build(subs=subs)
            )
        except (_NotRun, UsageError, docker.DockerProblem) as exc:
            runner.log(f"{day}: its image did not build ({exc})")
    good_run, bad_run = measure(days[0]), measure(days[1])
    if good_run is None:  # nothing to judge against: the change still awaits
        raise UsageError(f"{days[0]}", "the last good nightly's cell did not run")
    args = ["confirm", *where.store, "--change", item["change"], "--good-run", str(good_run)]
    args += ["--bad-run", str(bad_run)] if bad_run is not None else []
    args += ["--threshold", flags["--threshold"]] if flags["--threshold"] else []
    args += ["--issues"] if flags["--issues"] else []
    args += ["--repo", flags["--repo"]] if flags["--repo"] else []
    kept = json.loads(ask(args).strip().splitlines()[-1])
    line = (f"change {item['change']}: {cell.label} ({where.build.name}) {days[0]} against {days[1]}, "
            f"measured again: the gate says {kept['verdict']!r} ({kept['judged']})")  # fmt: skip
    runner.log(line)
    return line
