"""The GPU study as data: one ordered list of steps of the suite's own verbs (`run`, `crosscheck`,
`repeat`) on the `gpu-study` profile, narrowed by flags, in the order they matter.

A GPU held for a short window (a spot instance, a time-limited allocation) gives the study a few
minutes at a time, each command under a limit, and the next window's machine is bare: so each
call runs the steps not done yet, in order, until its deadline, each step has a fixed run id (the
same command again resumes it: the suite's own `--run-id` resume), and the `tiny` variant runs the
very same steps on shrunk models on a CPU, which is how it is tested. Leading check steps that
other topics ask of a window go first (CHECKS).

Only the matrix is read here (no torch); the steps' cells and estimates are suite.gpustudy.estimate's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from suite.errors import UsageError
from suite.spec.expand import Filters

GPU, TINY = "gpu", "tiny"
VARIANTS: tuple[str, ...] = (GPU, TINY)
PROFILE = {GPU: "gpu-study", TINY: "gpu-study-tiny"}
DEVICE = {GPU: "cuda", TINY: "cpu"}
# A call is one command under a limit (a window of 15 minutes, say, whose commands may run 10):
# the study stops its own steps before the deadline it is given, leaving time to pack what it
# measured (suite.gpustudy.call) and for the transfers. The study's call keeps to 9 minutes (a
# rerun still fits after it in such a window) and to 6 files.
CALL_LIMIT_S = 540.0  # the longest call (`--deadline-s`: the command's own limit)
RESERVE_S = (
    70.0  # within the deadline, after the steps: a step's stop (SIGINT, SIGKILL 45 s on), the last pack
)
MAX_FILES = 6  # what a call may leave in --out: its 4 (CALL_FILES) and what the command adds (nvidia-smi)
CALL_FILES = ("call{n}.tar.gz", "call{n}.log", "call{n}.md", "call{n}.json")
MAX_CALLS = 99
DEFAULT_DEADLINE_S = {GPU: CALL_LIMIT_S, TINY: 0.0}  # 0: no deadline (a CPU test waits for every cell)
STEP_OVERHEAD_S = 16.0  # a step's own Python, the model check and the environment probe: 14-18 s on the H200
ENERGY_ENV = "SUITE_ENERGY"  # suite.measure.energy.OFF_ENV: "off" skips the energy window
DEFAULT_MATRIX = Path(__file__).resolve().parents[2] / "matrix.yaml"  # as suite.cli.args
DEFAULT_REFERENCE = DEFAULT_MATRIX.parent / "results" / "reference"
REFERENCE_GPU = "A100"  # the guide's figures the GPU estimate borrows per-call times from

RO_MODELS = ("ConvNeXT", "ResNet", "Conditional-DETR", "MobileNet")  # the guide's reduce-overhead table
CLASSIFICATION = ("ViT", "BeiT", "ConvNeXT", "ResNet")
CROSSCHECK_MODELS = ("ResNet", "ViT", "ConvNeXT")  # small, medium, large (25.6, 86.6, 198 M)
REPEAT_MODELS = ("ResNet", "MobileNet")  # the two cheapest compiles of the twelve (cost model)
# a cross-check's rounds a function (at most `rounds`): on the H200 the ResNet cross-check's
# process took 43 s of its step's 61, its start and compile included
CROSSCHECK_BUDGET_S = 5.0


@dataclass(frozen=True)
class Step:
    """One invocation of a suite verb: its run id (fixed: running it again resumes it), the flags
    that narrow the profile, and the figures that differ between the GPU and the tiny variant
    (`iterations` is the GPU's; the tiny variant keeps its profile's)."""

    verb: str  # run | crosscheck | repeat | pair
    run_id: str
    what: str
    flags: tuple[str, ...]
    iterations: int | None = None
    rounds: int = 0  # crosscheck: at most this many rounds
    times: int = 0  # repeat
    extra: tuple[str, ...] = ()  # e.g. --compile-cost, --overlap
    budget_s: float = 0.0  # crosscheck: the rounds' time budget a function (0: the CLI's default)
    energy: bool = True  # False: the workers skip the energy window (SUITE_ENERGY=off)
    profile: str = ""  # a profile of its own (its tiny variant: the name + "-tiny"); "": the study's

    def __post_init__(self) -> None:
        if self.verb not in ("run", "crosscheck", "repeat", "pair"):
            raise ValueError(f"step {self.run_id}: unknown verb {self.verb!r}")
        if (self.verb == "crosscheck") != (self.rounds >= 2):
            raise ValueError(f"step {self.run_id}: a crosscheck, and only a crosscheck, has rounds >= 2")
        if (self.verb == "repeat") != (self.times >= 2):
            raise ValueError(f"step {self.run_id}: a repeat, and only a repeat, has times >= 2")

    def argv(self, variant: str, out: Path | str) -> list[str]:
        """`python -m suite` arguments of this step (what a human would type)."""
        args = [self.verb, "--profile", self.profile_of(variant), "--device", DEVICE[variant], *self.flags]
        if self.iterations and variant == GPU:
            args += ["--iterations", str(self.iterations)]
        if self.rounds:
            args += ["--rounds", str(self.rounds if variant == GPU else min(self.rounds, 3))]
        if self.times:
            args += ["--times", str(self.times)]
        if self.budget_s:
            args += ["--budget-s", f"{self.budget_s:g}"]
        return [*args, *self.extra, "--out", str(out), "--run-id", self.run_id]

    def profile_of(self, variant: str) -> str:
        """The matrix profile the step's command names."""
        if not self.profile:
            return PROFILE[variant]
        return self.profile if variant == GPU else f"{self.profile}-tiny"

    def env(self) -> dict[str, str]:
        """What the step's command runs with beyond the call's own environment."""
        return {} if self.energy else {ENERGY_ENV: "off"}

    @staticmethod
    def from_argv(argv: Sequence[str], what: str = "") -> Step:
        """The step a printed command ran (`python -m suite VERB ...`, as `argv` gives it, an
        environment's VAR=value before it), for estimating a step of an earlier commit's plan."""
        words = list(argv)
        energy = f"{ENERGY_ENV}=off" not in words
        words = [w for w in words if "=" not in w or w.startswith("-")]
        if words[:3] == ["python", "-m", "suite"]:
            words = words[3:]
        verb, rest = words[0], words[1:]
        flags: list[str] = []
        extra: list[str] = []
        numbers: dict[str, str] = {}
        run_id, profile, i = "", "", 0
        while i < len(rest):
            flag = rest[i]
            value = rest[i + 1] if i + 1 < len(rest) and not rest[i + 1].startswith("--") else None
            i += 1 if value is None else 2
            if value is None:
                extra.append(flag)
            elif flag == "--run-id":
                run_id = value
            elif flag == "--profile":
                profile = "" if value in PROFILE.values() else value.removesuffix("-tiny")
            elif flag in ("--iterations", "--rounds", "--times", "--budget-s"):
                numbers[flag] = value
            elif flag not in ("--profile", "--device", "--out"):
                flags += [flag, value]
        return Step(
            verb,
            run_id,
            what or run_id,
            tuple(flags),
            iterations=int(numbers["--iterations"]) if "--iterations" in numbers else None,
            rounds=int(numbers.get("--rounds", 60 if verb == "crosscheck" else 0)),
            times=int(numbers.get("--times", 3 if verb == "repeat" else 0)),
            extra=tuple(extra),
            budget_s=float(numbers.get("--budget-s", 0.0)),
            energy=energy,
            profile=profile,
        )

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
    """One call: the study's steps not done yet, in order, until its deadline."""

    number: int
    title: str
    steps: tuple[Step, ...] = field(default_factory=tuple)


def _models(names: Sequence[str]) -> str:
    return ",".join(names)


def _crosscheck(*names: str) -> Step:
    return Step(
        "crosscheck",
        "crosscheck-" + "-".join(n.lower() for n in names),
        f"cross-check {' and '.join(names)} (suite loop vs torch.utils.benchmark and CUDA events)",
        ("--models", ",".join(names), "--batch-sizes", "1", "--modes", "default"),
        iterations=5,  # many short rounds: the first H200's host moved in steps of 0.2-1 s
        rounds=50,  # at most; as many as CROSSCHECK_BUDGET_S allows
        budget_s=CROSSCHECK_BUDGET_S,
    )


def _run(run_id: str, what: str, models: Sequence[str] | None, sizes: str, modes: str) -> Step:
    flags = ("--models", _models(models)) if models else ()
    return Step("run", run_id, what, (*flags, "--batch-sizes", sizes, "--modes", modes))


# The other models, in the matrix's order (a step's cells come in it: model, then batch, then mode)
OTHERS = ("ViT", "BeiT", "Segformer", "Mask2former", "Maskformer", "OwlViT", "DETR", "Resnet-101")

# The GPU checks other topics ask of a window, run first, before the study: each a Step (its
# own run id, a suite verb), in the order they matter. Add one here; `plan` and `call` take it
# from there (its estimate, its place in the first call, passed over once done).
CHECKS: tuple[Step, ...] = (
    # the accuracy rule first (docs/accuracy.md): the six float32 cells the H200 of 2026-11-28
    # failed under the old check, and their float16 twins, from a profile of their own
    # (matrix.yaml: gpu-study-accuracy); their float32 cells come again, timed in full, below
    Step(
        "run",
        "accuracy",
        "the accuracy rule first: the six cells the old check failed, float32 and float16",
        (),
        profile="gpu-study-accuracy",
    ),
    # two builds side by side on this GPU (docs/pairs.md): an A/A pair of this machine's build,
    # ResNet-50 and ViT-B/16 at batch 1, eager and default, with device time: the paired
    # interval's width where the host's speed moves (`WORK/pair-aa-new`: the new side's rows)
    Step(
        "pair",
        "pair-aa",
        "an A/A pair (this build against itself, in alternating rounds): ResNet and ViT at batch 1",
        ("--models", "ResNet,ViT", "--batch-sizes", "1", "--modes", "default"),
        extra=("--exit-zero",),
    ),
    # compiles beside the timing on the GPU: the same cells as ro-bs1's compiled ones, two compiles
    # a wave, the first wave timed while the second compiles (`run --overlap`); against
    # ro-bs1's rows (phases apart, later, so the merged tables keep them): `python -m suite compare
    # WORK/check-overlap WORK/ro-bs1` (docs/measurement.md#compiles-beside-the-timing)
    Step(
        "run",
        "check-overlap",
        "compiles beside the timing (--overlap) on this GPU: ResNet and MobileNet at batch 1, compiled",
        (
            "--models",
            "ResNet,MobileNet",
            "--batch-sizes",
            "1",
            "--modes",
            "default,reduce-overhead",
            "--compile-pool",
            "2",
        ),
        extra=("--overlap",),
    ),
)

# The whole study, in the order it matters: a call runs the steps not done yet, in this order,
# until its deadline (the cell in flight is lost, every finished one kept), and the next call goes
# on from there. First the headline: the cross-check of the suite's timing on the GPU, then the
# guide's reduce-overhead table at batch 1 (each model's eager, default and reduce-overhead
# cells: one wave of 8 compiles, each eager cell timed in its model's default process), the
# other models at batch 1 (one more wave), then batch 4 and 16 in one run, the other
# cross-checks, compile cost, a dynamic-batch cell, repeatability. Every step has a run folder of
# its own: steps sharing one, a later step's resume would move an earlier step's failed rows to
# superseded/ without running them again (it does not select them; seen in the tiny run). The
# steps whose figures are not energy figures skip the energy window (SUITE_ENERGY=off): the
# repetitions, the compile-cost and dynamic-batch cells (their cells' energy is the runs' above).
STUDY_STEPS: tuple[Step, ...] = (
    _crosscheck("ResNet"),
    _run(
        "ro-bs1",
        "the reduce-overhead table at batch 1: eager, default and reduce-overhead, model by model",
        RO_MODELS,
        "1",
        "eager,default,reduce-overhead",
    ),
    _run("bs1-others", "the other models at batch 1, eager and default", OTHERS, "1", "eager,default"),
    Step(
        "run",
        "batches",
        "batch 4 and 16: the reduce-overhead table at 4, classification at 4 and 16 (eager and compiled)",
        (),
        profile="gpu-study-batches",
    ),
    _crosscheck("ViT", "ConvNeXT"),
    Step(
        "run",
        "compile-cost",
        "ResNet at batch 4 and 16, default, with the compile-cost processes (warm, mega-cache)",
        ("--models", "ResNet", "--batch-sizes", "4,16", "--modes", "default"),
        extra=("--compile-cost",),
        energy=False,
    ),
    Step(
        "run",
        "dynamic",
        "dynamic batch: one process serving 1, 4, 16, 1 (torch's default, auto)",
        ("--models", "ResNet", "--modes", "default", "--scenarios", "dynamic-batch", "--dynamic", "auto"),
        energy=False,
    ),
    Step(
        "repeat",
        "repeat",
        "repeatability: 4 cells, 3 back-to-back runs",
        (
            "--models",
            _models(REPEAT_MODELS),
            "--batch-sizes",
            "1",
            "--modes",
            "eager,default",
            "--schedule",
            "ahead",
        ),
        times=3,
        energy=False,
    ),
)
STUDY: tuple[Step, ...] = (*CHECKS, *STUDY_STEPS)
TITLE = "the GPU study, from where it stands: the headline first (docs/gpu-study.md)"


def _check_run_ids(steps: Sequence[Step]) -> None:
    ids = [step.run_id for step in steps]
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise ValueError(f"steps share a run folder: {', '.join(twice)}")


_check_run_ids(STUDY)


def call_of(number: int) -> Call:
    """Call N: the study's steps, all of them (those done already are passed over as it runs)."""
    if not 1 <= number <= MAX_CALLS:
        raise UsageError("CALL", f"a call's number is 1 to {MAX_CALLS}, not {number}")
    return Call(number, TITLE, STUDY)


def check_variant(variant: str) -> str:
    if variant not in VARIANTS:
        raise UsageError("--variant", f"{variant!r} is not one of: {', '.join(VARIANTS)}")
    return variant
