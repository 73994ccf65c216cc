"""The GPU study (issue 30) as data: three calls of a lent GPU machine, each a few steps of the
suite's own verbs (`run`, `crosscheck`, `repeat`) on the `gpu-study` profile, narrowed by flags.

A lent machine gives a session about 30 minutes of GPU time, at most 10 minutes a command, and a
fresh machine is bare: so the study is cut into calls that each fit a budget, each step has a fixed
run id (the same command again resumes it: the suite's own `--run-id` resume), and the `tiny`
variant runs the very same steps on shrunk models on a CPU, which is how the study is tested.

Only the matrix and the cost model are read here (no torch): `plan` prints the steps, their cells
and estimates on any host. Estimates are suite.spec.cost's, with one correction for the GPU: where
the guide published an eager time for the model and batch size (results/reference/, A100), a
forward call costs at least that; the cost model's per-call figure is far lower for the big-input
models (Maskformer at 640 x 864: the guide's 76 ms against the model's 6 ms).
"""

from __future__ import annotations

import csv
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from suite.errors import UsageError
from suite.spec.cost import estimate_seconds, forwards
from suite.spec.expand import Filters, expand
from suite.spec.model import Cell, Matrix

GPU, TINY = "gpu", "tiny"
VARIANTS: tuple[str, ...] = (GPU, TINY)
PROFILE = {GPU: "gpu-study", TINY: "gpu-study-tiny"}
DEVICE = {GPU: "cuda", TINY: "cpu"}
# A call of the device tool may run 600 s; the study stops its own steps before that, leaving time
# to pack what it measured (suite.gpustudy.call) and for the transfers.
CALL_LIMIT_S = 540.0  # the "under 9 minutes"
DEFAULT_BUDGET_S = {GPU: 480.0, TINY: 0.0}  # 0: no deadline (a CPU test waits for every cell)
STEP_OVERHEAD_S = 10.0  # a step's own Python, the model check and the environment probe (children)
DEFAULT_MATRIX = Path(__file__).resolve().parents[2] / "matrix.yaml"  # as suite.cli.args
DEFAULT_REFERENCE = DEFAULT_MATRIX.parent / "results" / "reference"
REFERENCE_GPU = "A100"  # the guide's figures the GPU estimate borrows per-call times from

RO_MODELS = ("ConvNeXT", "ResNet", "Conditional-DETR", "MobileNet")  # the guide's reduce-overhead table
CLASSIFICATION = ("ViT", "BeiT", "ConvNeXT", "ResNet")
CROSSCHECK_MODELS = ("ResNet", "ViT", "ConvNeXT")  # small, medium, large (25.6, 86.6, 198 M)
REPEAT_MODELS = ("ResNet", "MobileNet")  # the two cheapest compiles of the twelve (cost model)


@dataclass(frozen=True)
class Step:
    """One invocation of a suite verb: its run id (fixed: running it again resumes it), the flags
    that narrow the profile, and the figures that differ between the GPU and the tiny variant
    (`iterations` is the GPU's; the tiny variant keeps its profile's)."""

    verb: str  # run | crosscheck | repeat
    run_id: str
    what: str
    flags: tuple[str, ...]
    iterations: int | None = None
    rounds: int = 0  # crosscheck
    times: int = 0  # repeat
    extra: tuple[str, ...] = ()  # e.g. --compile-cost

    def __post_init__(self) -> None:
        if self.verb not in ("run", "crosscheck", "repeat"):
            raise ValueError(f"step {self.run_id}: unknown verb {self.verb!r}")
        if (self.verb == "crosscheck") != (self.rounds >= 2):
            raise ValueError(f"step {self.run_id}: a crosscheck, and only a crosscheck, has rounds >= 2")
        if (self.verb == "repeat") != (self.times >= 2):
            raise ValueError(f"step {self.run_id}: a repeat, and only a repeat, has times >= 2")

    def argv(self, variant: str, out: Path | str) -> list[str]:
        """`python -m suite` arguments of this step (what a human would type)."""
        args = [self.verb, "--profile", PROFILE[variant], "--device", DEVICE[variant], *self.flags]
        if self.iterations and variant == GPU:
            args += ["--iterations", str(self.iterations)]
        if self.rounds:
            args += ["--rounds", str(self.rounds if variant == GPU else min(self.rounds, 3))]
        if self.times:
            args += ["--times", str(self.times)]
        return [*args, *self.extra, "--out", str(out), "--run-id", self.run_id]

    def filters(self, variant: str) -> Filters:
        """The step's selection as expand takes it (the flags above, parsed the CLI's way)."""
        values = dict(zip(self.flags[::2], self.flags[1::2], strict=True))

        def names(flag: str) -> tuple[str, ...] | None:
            return tuple(values[flag].split(",")) if flag in values else None

        overrides: dict[str, object] = {}
        if self.iterations and variant == GPU:
            overrides["iterations"] = self.iterations
        if "--compile-cost" in self.extra:
            overrides.update(compile_cost=True, compile_cache="cold")
        sizes = names("--batch-sizes")
        return Filters(
            models=names("--models"),
            batch_sizes=tuple(int(b) for b in sizes) if sizes else None,
            modes=names("--modes"),
            scenarios=names("--scenarios"),
            overrides=overrides,
            dynamic=names("--dynamic"),
        )


@dataclass(frozen=True)
class Call:
    number: int
    title: str
    steps: tuple[Step, ...] = field(default_factory=tuple)


def _models(names: Sequence[str]) -> str:
    return ",".join(names)


def _crosscheck(name: str) -> Step:
    return Step(
        "crosscheck",
        f"call2-crosscheck-{name.lower()}",
        f"cross-check {name} (suite loop vs torch.utils.benchmark and CUDA events)",
        ("--models", name, "--batch-sizes", "1", "--modes", "default"),
        iterations=50,
        rounds=5,
    )


def _ro(sizes: str, mode: str, what: str) -> Step:
    flags = ("--models", _models(RO_MODELS), "--batch-sizes", sizes, "--modes", mode)
    run_id = f"call2-{'ro' if mode == 'reduce-overhead' else mode}-bs{sizes}"
    return Step("run", run_id, f"reduce-overhead table: {what}", flags)


# Every step has a run folder of its own: steps sharing one, a later step's resume would move an
# earlier step's failed rows (error, timeout) to superseded/ to run them again, and not run them,
# since it does not select them (seen in the tiny run). The merge reads them all.
# Each call's steps in the order they matter, since a call that reaches its deadline stops there
# (resumable): compiled cells before eager ones (a compiled cell also times eager, interleaved: the
# paired speed-up), and what only this call measures before more of the same.
CALLS: tuple[Call, ...] = (
    Call(
        1,
        "every model at batch 1, eager and default",
        (
            Step("run", "call1-default", "batch 1, default", ("--batch-sizes", "1", "--modes", "default")),
            Step("run", "call1-eager", "batch 1, eager", ("--batch-sizes", "1", "--modes", "eager")),
        ),
    ),
    Call(
        2,
        "the guide's reduce-overhead models at batch 1 and 4; the cross-check",
        (
            _crosscheck(CROSSCHECK_MODELS[0]),
            _ro("1", "reduce-overhead", "batch 1, reduce-overhead (eager and default: call 1)"),
            _crosscheck(CROSSCHECK_MODELS[1]),
            _ro("4", "reduce-overhead", "batch 4, reduce-overhead"),
            _crosscheck(CROSSCHECK_MODELS[2]),
            _ro("4", "eager", "batch 4, eager"),
        ),
    ),
    Call(
        3,
        "classification at batch 4 and 16; compile cost; dynamic batch; repeatability",
        (
            Step(
                "run",
                "call3-compile-cost",
                "ResNet at batch 4 and 16, default, with the compile-cost processes (warm, mega-cache)",
                ("--models", "ResNet", "--batch-sizes", "4,16", "--modes", "default"),
                extra=("--compile-cost",),
            ),
            Step(
                "run",
                "call3-dynamic",
                "dynamic batch: one process serving 1, 4, 16, 1 (torch's default, auto)",
                (
                    "--models",
                    "ResNet",
                    "--modes",
                    "default",
                    "--scenarios",
                    "dynamic-batch",
                    "--dynamic",
                    "auto",
                ),
            ),
            Step(
                "repeat",
                "call3-repeat",
                "repeatability: 4 cells, 3 back-to-back runs",
                ("--models", _models(REPEAT_MODELS), "--batch-sizes", "1", "--modes", "eager,default"),
                times=3,
            ),
            Step(
                "run",
                "call3-default",
                "classification at batch 4 and 16, default",
                ("--models", "ViT,BeiT,ConvNeXT", "--batch-sizes", "4,16", "--modes", "default"),
            ),
            Step(
                "run",
                "call3-eager-bs4-16",
                "classification at batch 4 and 16, eager (ConvNeXT and ResNet at 4: call 2)",
                ("--models", "ViT,BeiT", "--batch-sizes", "4,16", "--modes", "eager"),
            ),
            Step(
                "run",
                "call3-eager-bs16",
                "classification at batch 16, eager",
                ("--models", "ConvNeXT,ResNet", "--batch-sizes", "16", "--modes", "eager"),
            ),
        ),
    ),
)


def _check_run_ids(calls: Sequence[Call]) -> None:
    ids = [step.run_id for call in calls for step in call.steps]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"steps share a run folder: {', '.join(twice)}")


_check_run_ids(CALLS)


def call_of(number: int) -> Call:
    for call in CALLS:
        if call.number == number:
            return call
    raise UsageError("CALL", f"the study has calls {', '.join(str(c.number) for c in CALLS)}, not {number}")


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise UsageError("--variant", f"{variant!r} is not one of: {', '.join(VARIANTS)}")
    return variant


# ---------------------------------------------------------------------------------------------
# Estimates


def guide_forward_ms(reference: Path) -> dict[tuple[str, int], float]:
    """{(model, batch size): the guide's eager milliseconds on its reference GPU} from the guide's
    main tables (results/reference/guide_torch2.0.1.csv); empty where the file is missing."""
    path = reference / "guide_torch2.0.1.csv"
    out: dict[tuple[str, int], float] = {}
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                if row.get("GPU") != REFERENCE_GPU or row.get("erratum"):
                    continue
                try:
                    out[(row["model"], int(row["batch size"]))] = float(row["without torch.compile"])
                except (KeyError, ValueError):  # OOM, a blank: no figure
                    continue
    except OSError:
        return {}
    return out


def _timed_calls_s(cell: Cell) -> float:
    """Seconds the cost model gives one more timed iteration of the cell (both functions of a
    compiled cell, interleaved): its per-call figure, read off the model itself."""
    more = replace(cell, settings=replace(cell.settings, iterations=cell.settings.iterations + 1))
    return estimate_seconds(more) - estimate_seconds(cell)


def cell_seconds(cell: Cell, guide: dict[tuple[str, int], float]) -> float:
    """The cost model's estimate, every forward call at least as long as the guide's eager call on
    its GPU where it has one (`guide`: empty for the tiny variant, whose models are shrunk)."""
    seconds = estimate_seconds(cell)
    ms = guide.get((cell.model.name, cell.batch_size))
    if ms is None or cell.settings.shrink or cell.dynamic:
        return seconds
    per_forward = _timed_calls_s(cell) / (1 if cell.mode == "eager" else 2)
    return seconds + max(0.0, ms / 1000.0 - per_forward) * forwards(cell)


def _timed_seconds(cell: Cell, guide: dict[tuple[str, int], float]) -> float:
    """The estimate's seconds of the cell's timed iterations: the model is linear in them, so their
    number times one more's (a cell of no iterations is no valid cell: Settings' rules)."""
    more = replace(cell, settings=replace(cell.settings, iterations=cell.settings.iterations + 1))
    return cell.settings.iterations * (cell_seconds(more, guide) - cell_seconds(cell, guide))


def step_seconds(step: Step, cells: Sequence[Cell], guide: dict[tuple[str, int], float]) -> float:
    """A step's estimate: its cells (a repeat: each repetition; a cross-check: its rounds, each
    the suite's half and the independent half of the same length, plus CUDA events), plus its own
    start-up."""
    seconds = sum(cell_seconds(c, guide) for c in cells)
    if step.verb == "repeat":
        seconds *= step.times
    elif step.verb == "crosscheck":
        for cell in cells:
            timed = _timed_seconds(cell, guide)
            seconds += (step.rounds - 1) * timed + step.rounds * 2 * timed
    return seconds + STEP_OVERHEAD_S


@dataclass(frozen=True)
class PlannedStep:
    step: Step
    cells: tuple[Cell, ...]
    seconds: float


def plan_call(
    matrix: Matrix, call: Call, variant: str, reference: Path, build: str = "?"
) -> list[PlannedStep]:
    """Each step of a call with its cells and estimate (`build`: the label the rows will carry, as
    `run` resolves it on the machine; only the cells' identity depends on it)."""
    guide = guide_forward_ms(reference) if variant == GPU else {}
    out = []
    for step in call.steps:
        cells = expand(matrix, PROFILE[variant], build, step.filters(variant))
        if not cells:
            raise UsageError(
                f"{matrix.path}: profiles.{PROFILE[variant]}", f"step {step.what!r} selects no cell"
            )
        out.append(PlannedStep(step, tuple(cells), step_seconds(step, cells, guide)))
    return out
