"""Checks made before the first cell: where results go, the environment (probed in a child,
so the parent never imports torch), the build label, the models against transformers (in the
same child), and the image every cell feeds. Each failure is a UsageError: one line, exit status 2.
"""

from __future__ import annotations

import collections
import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

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
from suite.system import gpus

# Below this much free space where results go, no cell starts (`run --min-free-mb`):
# a cold compile cache alone can take hundreds of MB per cell.
DEFAULT_MIN_FREE_MB = 1024


CHECK_MODULE = "suite.measure.config_check"
CHECK_TIMEOUT_S = 300


class Child:
    """The one Python a run starts before its first cell (suite.measure.config_check): with a
    `device` it probes it first (what `suite env --json --device D` says), and then checks the
    models the parent sends once it has expanded the cells for what the probe found; without one
    (`plan`) it only checks. Started on the first question; a context manager that ends it."""

    def __init__(self, device: str | None = None) -> None:
        self.device = device
        self.proc: subprocess.Popen[str] | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.errors: collections.deque[str | None] = collections.deque(maxlen=20)  # its stderr's last lines
        self.probed: dict[str, Any] | None = None  # the probe's answer, once read

    def __enter__(self) -> Child:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def environment(self) -> provenance.Environment | str | None:
        """What the probe found: the environment, the reason the device cannot be used, or None
        where the child could not say (the caller probes on its own, and says what)."""
        assert self.device is not None, "a child started without a device probes nothing"
        if self.probed is None:
            self.probed = self._answer(self._started()) or {}
        answer = self.probed
        if "environment" in answer:
            return provenance.Environment(**answer["environment"])
        return str(answer["device_error"]) if "device_error" in answer else None

    def problems(self, models: str) -> list[Problem] | str | None:
        """Problems transformers finds in `models` (JSON: [{spec, shrink, from_config}]); the
        reason as text when this Python has no transformers, None when the check failed
        otherwise (said in a warning). Either way unchecked: the workers will report a bad model
        in their rows instead."""
        if self.device is not None:
            self.environment()  # its first answer is the probe's
        proc = self._started()
        assert proc.stdin is not None
        with contextlib.suppress(OSError):  # a child that died: said by its answer's absence
            proc.stdin.write(models)
            proc.stdin.close()
        answer = self._answer(proc)
        if answer is None:
            return None
        if "unavailable" in answer:
            return str(answer["unavailable"])
        return [Problem(**p) for p in answer["problems"]]

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def _started(self) -> subprocess.Popen[str]:
        if self.proc is not None:
            return self.proc
        cmd = [sys.executable, "-m", CHECK_MODULE] + (["--probe", self.device] if self.device else [])
        pipe = subprocess.PIPE
        try:
            self.proc = subprocess.Popen(
                cmd, stdin=pipe, stdout=pipe, stderr=pipe, env=child_env(), text=True
            )
        except OSError as exc:  # the workers' Python cannot even start: no cell could
            raise UsageError("env", f"cannot start {sys.executable}: {exc.strerror or exc}") from None
        threading.Thread(target=self._read, args=(self.proc.stdout, self.lines.put), daemon=True).start()
        threading.Thread(target=self._read, args=(self.proc.stderr, self.errors.append), daemon=True).start()
        return self.proc

    @staticmethod
    def _read(stream: IO[str], keep: Callable[[str | None], None]) -> None:
        for line in stream:
            keep(line)
        keep(None)

    def _answer(self, proc: subprocess.Popen[str]) -> dict[str, Any] | None:
        """The child's next answer (one JSON line); None, with a warning, where none comes."""
        try:
            line = self.lines.get(timeout=CHECK_TIMEOUT_S)
        except queue.Empty:
            print(f"suite: warning: checking the models took over {CHECK_TIMEOUT_S} s", file=sys.stderr)
            return None
        try:
            answer = json.loads(line) if line else None
        except json.JSONDecodeError:
            answer = None
        if not isinstance(answer, dict):
            why = self._tail(proc)
            print(f"suite: warning: models not checked against transformers ({why})", file=sys.stderr)
            return None
        return answer

    def _tail(self, proc: subprocess.Popen[str]) -> str:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=10)
        return last_line("".join(line for line in self.errors if line), "no output")


def probe(device: str, child: Child | None = None, python: str = sys.executable) -> provenance.Environment:
    """Collect provenance in a child process (also checks --device cuda before any cell): the
    model check's `child` where it has probed (one child instead of two), else `suite env`."""
    found = child.environment() if child is not None else None
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


def megabytes(value: float) -> str:
    """A free-disk figure as the messages write it."""
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
            f"only {megabytes(free)} MB free on the disk of {out}, below the minimum of "
            f"{megabytes(min_free_mb)} MB: free some space (or lower --min-free-mb)",
        )


def check_models(
    matrix: Matrix, cells: Iterable[Cell], warn_unchecked: bool = False, child: Child | None = None
) -> None:
    """Raise UsageError for the first problem transformers finds in the models `cells` use
    (suite.measure.config_check, in a child process: `child`, the one that probed, or one of its
    own): an unknown model type or class, and for the models built from their config (random
    weights, custom configurations) the config's fields, types, ranges and head counts. A clean
    check is remembered (suite.run.checkcache): the same models start no second check."""
    wanted = _models_of(cells)
    if not wanted:
        return
    models = "[" + ", ".join(wanted) + "]"
    key = checkcache.key_of(models)
    if checkcache.found_clean(key):
        return
    with child or Child() as asked:
        problems = asked.problems(models)
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


def _models_of(cells: Iterable[Cell]) -> list[str]:
    """The models of `cells`, each once, as the child reads it."""
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
        wanted.setdefault(item, None)
    return list(wanted)


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
    child: Child | None = None,
) -> None:
    """What every cell needs before the first one runs: its image (each cell of one expansion
    feeds the same one) and its model as transformers sees it. `warn_unchecked`: say so when
    this Python has no transformers to check the models with (`run`, once the probe has found
    torch: its workers would fail; `plan` runs on hosts without either, quietly). `child`: see
    check_models."""
    if cells:
        where = image_field(matrix, profile, filters.overrides)
        check_image(cells[0].settings.image, where, any(inputs.is_offline(c.settings.weights) for c in cells))
    check_models(matrix, cells, warn_unchecked, child)


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
    if environment.device_type != "cuda" or os.environ.get(gpus.STATE_ENV):
        return
    gpu = machine.for_this_process()
    if gpu is None:
        return
    why = gpus.refusal(gpu, gpus.compute_apps(), allow_busy, allow_mig)
    if why:
        raise UsageError("--device", why)


def prepare(request: Request, min_free_mb: float | None = DEFAULT_MIN_FREE_MB) -> Prepared:
    """Every check before the first cell of `run`, `repeat` and `crosscheck`, cheapest first:
    a resumed run folder; where results go and its free disk (`min_free_mb` None: not checked);
    then one child Python probes the device, the profile and the build follow from what it found,
    the cells are expanded once, and the same child checks their models (their image too)."""
    matrix = request.matrix
    if request.run_id:  # a damaged run folder is found in a moment, before the slower checks
        check_run_folder(request.out / request.run_id)
    check_writable(request.out)
    if min_free_mb is not None:
        check_free_space(request.out, min_free_mb)
    with Child(request.device) as child:
        environment = probe(request.device, child)
        profile = request.profile_for(environment.device_type)
        build = resolve_build(matrix, request.build, environment)
        cells = request.cells(profile, build)
        check_inputs(matrix, profile, request.filters, cells, warn_unchecked=True, child=child)
    narrowed = request.narrowed(cells, profile)
    if narrowed:
        print(f"suite: warning: {narrowed}", file=sys.stderr)
    return Prepared(environment, profile, build, cells)
