"""Checks made before the first cell: where results go, the environment (probed in a child,
so the parent never imports torch), the build label, the models against transformers (again in
a child), and the image every cell feeds. Each failure is a UsageError: one line, exit status 2.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from suite.errors import UsageError, last_line
from suite.measure import inputs, machine, provenance
from suite.measure.config_check import Problem
from suite.results import one_line, slug
from suite.run import checkcache
from suite.run.environ import child_env
from suite.spec.expand import Filters, image_field, pick_build
from suite.spec.model import Cell, Matrix
from suite.spec.request import Request
from suite.spec.settings import ImageSpec

# Below this much free space where results go, no cell starts (`run --min-free-mb`):
# a cold compile cache alone can take hundreds of MB per cell.
DEFAULT_MIN_FREE_MB = 1024


# What the model check's child found when it was also asked to probe (run, repeat and
# crosscheck check their models first: `prepare`), by device: the
# Environment, or the reason the device cannot be used.
_probed: dict[str, provenance.Environment | str] = {}


def probe(device: str, python: str = sys.executable) -> provenance.Environment:
    """Collect provenance in a child process (also checks --device cuda before any cell); the
    model check's answer where it already probed this Python (one child instead of two)."""
    found = _probed.pop(device, None) if python == sys.executable else None
    if isinstance(found, provenance.Environment):
        return found
    if isinstance(found, str):
        raise UsageError("--device", one_line(found))
    cmd = [python, "-m", "suite", "env", "--json", "--device", device]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=300, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError("env", "probing the environment took over 300 s") from None
    except OSError as exc:  # the worker's Python cannot even start: no cell could
        raise UsageError("env", f"cannot start {python}: {exc.strerror or exc}") from None
    if proc.returncode != 0:
        last = last_line(proc.stderr, "(no output)").removeprefix("suite env: error: ")
        if last.startswith("--device: "):
            raise UsageError("--device", one_line(last.removeprefix("--device: ")))
        raise UsageError("env", f"probing the environment failed: {one_line(last)}")
    return provenance.from_json(proc.stdout.strip().splitlines()[-1])


def resolve_build(matrix: Matrix, requested: str | None, env: provenance.Environment) -> str:
    """The build label for the rows: the one asked for (checked against the running
    torch), else the single matrix build whose torch version is running, else
    `torch<version>`."""
    if requested:
        spec = pick_build(matrix, requested)
        if not spec.matches(env.torch_version):
            raise UsageError(
                "--build",
                f"build {requested!r} pins torch {spec.torch}, but this Python "
                f"runs torch {env.torch_version}; run it in the build's environment "
                f"(nox -s bench-local -- --build {requested}) or drop --build",
            )
        return requested
    matching = [b.name for b in matrix.builds.values() if b.matches(env.torch_version)]
    return matching[0] if len(matching) == 1 else slug(f"torch{env.torch_version}")


RUN_FOLDER_HINT = "move it away, or use another --run-id"


def check_writable(folder: Path, where: str = "--out", hint: str = "", create: bool = True) -> None:
    """Fail before any cell runs if results cannot be written to `folder`: a file in its
    place, a folder that takes no file. `create`: make it if missing (else a missing one
    passes, and nothing is made: a quick look before the slower checks)."""
    problem = ""
    if folder.exists() and not folder.is_dir():
        problem = "it is a file, not a folder"
    elif create or folder.is_dir():
        try:
            folder.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-"):
                pass
        except OSError as exc:
            problem = exc.strerror or str(exc)
    if problem:
        raise UsageError(where, f"cannot write results to {folder}: {problem}{f'; {hint}' if hint else ''}")


def check_run_folder(run_dir: Path) -> None:
    """A run folder being resumed: `raw/`, `logs/` and `.scratch/` take files, where they are
    there (nothing is made: the runner looks again, creating them, once the probe has named
    the CSV and its lock)."""
    for folder in (run_dir, run_dir / "raw", run_dir / "logs", run_dir / ".scratch"):
        check_writable(folder, "--run-id", RUN_FOLDER_HINT, create=False)


def _mb(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:g}"


def free_mb(path: Path) -> float:
    return shutil.disk_usage(path).free / 2**20


def check_free_space(out: Path, min_free_mb: float) -> None:
    """Fail before any cell runs if the disk that holds the results is (nearly) full."""
    try:
        free = free_mb(out)
    except OSError as exc:
        raise UsageError("--out", f"cannot check the free space of {out}: {exc.strerror or exc}") from None
    if free < min_free_mb:
        raise UsageError(
            "--out",
            f"only {_mb(free)} MB free on the disk of {out}, below the minimum of {_mb(min_free_mb)} MB: "
            "free some space (or lower --min-free-mb)",
        )


CHECK_TIMEOUT_S = 300
_checked: set[str] = set()  # models already checked in this process (cmd_run expands twice)


def check_models(
    matrix: Matrix, cells: Iterable[Cell], warn_unchecked: bool = False, probe_device: str | None = None
) -> None:
    """Raise UsageError for the first problem transformers finds in the models `cells` use
    (suite.measure.config_check, in a child process): an unknown model type or class, and
    for the models built from their config (random weights, custom configurations) the
    config's fields, types, ranges and head counts. `probe_device`: the child also probes
    for it, and a later `probe(probe_device)` takes its answer."""
    if probe_device is not None:
        _probed.clear()  # what an earlier check found is not this run's probe
    wanted = _unchecked(cells)
    if not wanted:
        return
    models = "[" + ", ".join(wanted) + "]"
    key = checkcache.key_of(models)
    if probe_device is None and checkcache.found_clean(key):  # `plan`: checked clean before
        _checked.update(wanted)
        return
    if probe_device is None:
        payload = models
    else:
        payload = f'{{"models": {models}, "device": {json.dumps(probe_device)}}}'
    problems = _run_child(payload, probe_device)
    if isinstance(problems, str):  # no transformers in this Python
        if warn_unchecked:
            print(f"suite: warning: models not checked ({problems})", file=sys.stderr)
        return
    if problems is None:
        return
    if problems:
        p = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise UsageError(f"{matrix.path}: {p.field}", p.message + more)
    checkcache.remember_clean(key)
    _checked.update(wanted)


def _unchecked(cells: Iterable[Cell]) -> dict[str, None]:
    """The models of `cells` this process has not checked yet, each as the child reads it."""
    wanted: dict[str, None] = {}
    for cell in cells:
        # default=str: a config may hold YAML values JSON has no type for (the child sees their text)
        item = json.dumps(
            {
                "spec": asdict(cell.model),
                "shrink": cell.settings.shrink,
                "from_config": cell.settings.weights == "random",
            },
            default=str,
        )
        if item not in _checked:
            wanted.setdefault(item, None)
    return wanted


def check_image(image: ImageSpec, where: str, offline: bool) -> None:
    """The photo every cell feeds, before the first cell: a local file pillow reads, and one
    at all when the cells run offline (a URL is then never fetched). A URL is left to the
    worker, which fetches it once into a cache and falls back to the local file."""
    if offline and not image.path:
        raise UsageError(
            where,
            f"{f'{image.url}: ' if image.url else ''}cells built from configs (random weights) or run "
            "with HF_HUB_OFFLINE=1 feed a local image, and none is given (image.path)",
        )
    if image.path:
        problem = inputs.image_problem(image.path)
        if problem:
            raise UsageError(where if where == "--image" else f"{where}.path", problem)


def check_inputs(
    matrix: Matrix,
    profile: str,
    filters: Filters,
    cells: Sequence[Cell],
    warn_unchecked: bool = False,
    probe_device: str | None = None,
) -> None:
    """What every cell needs before the first one runs: its model as transformers sees it,
    and its image (each cell of one expansion feeds the same one). `warn_unchecked`: say so
    when this Python has no transformers to check the models with (`run`, once the probe has
    found torch: its workers would fail; `plan` runs on hosts without either, quietly).
    `probe_device`: see check_models."""
    if cells:
        where = image_field(matrix, profile, filters.overrides)
        check_image(cells[0].settings.image, where, any(inputs.is_offline(c.settings.weights) for c in cells))
    check_models(matrix, cells, warn_unchecked, probe_device)


def _run_child(payload: str, probe_device: str | None = None) -> list[Problem] | str | None:
    """Problems found by `python -m suite.measure.config_check`; the reason as text when this
    Python has no transformers, None when the check failed otherwise (said in a warning). Either
    way unchecked: the workers will report a bad model in their rows instead. What it probed
    for `probe_device` is kept for `probe`."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "suite.measure.config_check"],
            input=payload,
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        print(f"suite: warning: checking the models took over {CHECK_TIMEOUT_S} s", file=sys.stderr)
        return None
    except OSError as exc:  # the workers' Python cannot even start: no cell could
        raise UsageError("env", f"cannot start {sys.executable}: {exc.strerror or exc}") from None
    lines = proc.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        tail = last_line(proc.stderr, "no output")
        print(f"suite: warning: models not checked against transformers ({tail})", file=sys.stderr)
        return None
    if "unavailable" in answer:
        return str(answer["unavailable"])
    if probe_device is not None and "environment" in answer:
        _probed[probe_device] = provenance.Environment(**answer["environment"])
    elif probe_device is not None and "device_error" in answer:
        _probed[probe_device] = str(answer["device_error"])
    return [Problem(**p) for p in answer["problems"]]


@dataclass(frozen=True)
class Prepared:
    """What the checks before the first cell found: the environment (probed in a child), the
    profile it implies, the build label for the rows, and the cells to run."""

    environment: provenance.Environment
    profile: str
    build: str
    cells: list[Cell]


def check_gpu(environment: provenance.Environment, allow_busy: bool, allow_mig: bool) -> None:
    """A GPU run refused before its first cell, in one line, when its GPU runs other processes
    or is in MIG mode (unless allowed). Skipped inside a container session's container: the
    host checked its GPU before starting it (SUITE_GPU_STATE), and a container cannot see the
    host's processes."""
    if environment.device_type != "cuda" or os.environ.get(machine.STATE_ENV):
        return
    gpu = machine.for_this_process()
    if gpu is None:
        return
    why = machine.refusal(gpu, machine.compute_apps(), allow_busy, allow_mig)
    if why:
        raise UsageError("--device", why)


def prepare(request: Request, min_free_mb: float | None = DEFAULT_MIN_FREE_MB) -> Prepared:
    """Every check before the first cell of `run`, `repeat` and `crosscheck`, cheapest first:
    a resumed run folder; the selection, its models and image (the model check's child probes
    the device too: one Python started, not two); where results go and its free disk
    (`min_free_mb` None: not checked); then the probe, the build, and the cells for the device."""
    matrix, filters = request.matrix, request.filters
    if request.run_id:  # a damaged run folder is found in a moment, before the slower checks
        check_run_folder(request.out / request.run_id)
    guess = request.profile_for(None)
    planned = request.planned(guess, request.build or "?")
    check_inputs(matrix, guess, filters, planned, probe_device=request.device)
    if request.profile:  # without one, the probe decides (smoke on CPU, full on a GPU)
        request.selected(planned, guess)
    check_writable(request.out)
    if min_free_mb is not None:
        check_free_space(request.out, min_free_mb)
    environment = probe(request.device)
    profile = request.profile_for(environment.device_type)
    build = resolve_build(matrix, request.build, environment)
    cells = request.cells(profile, build)
    check_inputs(matrix, profile, filters, cells, warn_unchecked=True)
    return Prepared(environment, profile, build, cells)
