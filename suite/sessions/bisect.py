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
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from types import ModuleType

from suite.errors import UsageError
from suite.history.bisect import SKIP, Cell, Judged, Result, bisect
from suite.results import slug
from suite.sessions import containers, docker, images
from suite.sessions.posargs import refuse_rest, take
from suite.sessions.runner import Runner, load
from suite.spec import BuildSpec, Matrix

DEFAULT_BUILD = "nightly-current"


def nightly_pin(root: Path) -> ModuleType:
    """containers/nightly_pin.py: the index's dates (a script, loaded from its file)."""
    spec = importlib.util.spec_from_file_location("nightly_pin", root / "containers" / "nightly_pin.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("nightly_pin", module)
    spec.loader.exec_module(module)
    return module


def index_dates(build: BuildSpec, root: Path) -> list[date]:
    """The dates with both a torch and a torchvision nightly on the build's index."""
    pin = nightly_pin(root)
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


def container_measure(
    runner: Runner,
    matrix: Matrix,
    build: BuildSpec,
    cell: Cell,
    suite_args: Sequence[str],
    device: str,
    out: Path,
    root: Path,
    subs: images.Substitutes,
) -> Callable[[date], Path | None]:
    """A date -> the run folder of the cell run in that date's image (None: not built, not run)."""
    hf_cache = containers.hf_cache_dir().resolve()

    def error(message: str) -> None:
        raise _NotRun(message)

    quiet = Runner(run=runner.run, log=runner.log, error=error)  # type: ignore[arg-type]

    def measure(day: date) -> Path | None:
        spec = replace(build, build_args={**build.build_args, "TORCH_NIGHTLY_DATE": f"{day:%Y%m%d}"})
        run_id = f"bisect-{slug(cell.label)}-{day:%Y%m%d}"
        opts = docker.run_options(out.resolve(), run_id, hf_cache, False, device, "")
        try:
            tag = containers.ensure_image(quiet, matrix, spec, root, containers.Build(subs=subs))
            containers.prepare_mounts(quiet, opts)
            args = ["--models", cell.model, "--batch-sizes", str(cell.batch_size), "--modes", cell.mode]
            cmd = docker.suite_run_command(spec, opts, tag, [*suite_args, *args])
            if containers.run_docker(cmd, quiet).returncode != 0:
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
    flags = take(
        args,
        values=[
            "--cell",
            "--good",
            "--bad",
            "--build",
            "--profile",
            "--device",
            "--threshold",
            "--out",
            "--index",
        ],
        switches=["--local-bases"],
    )
    refuse_rest(
        args,
        "bisect",
        "--cell, --good, --bad, --build, --profile, --device, --threshold, --out, --index, --local-bases",
    )
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
    measure = container_measure(runner, matrix, build, cell, ["--profile", profile], device, out, root, subs)
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
