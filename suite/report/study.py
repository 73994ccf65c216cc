"""Read raw CSVs from any number of runs into one typed table, and say what was set aside.

Host side only (pandas). The CSV contract itself (columns, statuses, torn last rows) is
checked by `suite.results.read_rows`; this module adds what the tables need on top:
typed numbers, required fields, one row per cell. Nothing is dropped silently: every
file or row set aside yields a one-line reason naming the file, line and field.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from suite.errors import UsageError
from suite.results import CsvFormatError, read_rows
from suite.spec.load import load_matrix
from suite.spec.model import BUILD_KINDS

NUMERIC_COLUMNS: tuple[str, ...] = (
    "batch_size",
    "iterations",
    "mean_ms",
    "median_ms",
    "p10_ms",
    "p90_ms",
    "std_ms",
    "min_ms",
    "ci95_low_ms",
    "ci95_high_ms",
    "eager_median_ms",
    "speedup",
    "speedup_ci95_low",
    "speedup_ci95_high",
    "compile_s",
    "graph_breaks",
    "recompiles",
    "max_abs_diff",
    "peak_mem_mb",
    "params_m",
    "wall_s",
)
# Durations and ratios: a zero or negative value can only be a corrupt row.
POSITIVE_COLUMNS: tuple[str, ...] = (
    "mean_ms",
    "median_ms",
    "p10_ms",
    "p90_ms",
    "min_ms",
    "ci95_low_ms",
    "ci95_high_ms",
    "eager_median_ms",
    "speedup",
    "speedup_ci95_low",
    "speedup_ci95_high",
)
REQUIRED_TEXT: tuple[str, ...] = ("build", "device", "gpu_name", "task", "model", "mode")
REQUIRED_WHEN_OK: tuple[str, ...] = ("mean_ms", "median_ms")
ACCURACY_VALUES: tuple[str, ...] = ("", "pass", "fail")
# A cell across runs: the CSV's resume key, with the GPU and the model variant (smoke, custom).
CELL_COLUMNS: tuple[str, ...] = (
    "build",
    "device",
    "gpu_name",
    "task",
    "model",
    "batch_size",
    "mode",
    "dtype",
    "scenario",
    "weights",
    "variant",
)
EAGER = "eager"
KIND_ORDER: tuple[str, ...] = BUILD_KINDS  # the order builds are listed in: stable, nightly, release


@dataclass(frozen=True)
class Loaded:
    """The rows that can be used (one per cell), and an account of everything else."""

    frame: pd.DataFrame
    files: tuple[Path, ...]
    rows_read: int
    skipped: tuple[str, ...]  # one line per file or row set aside, naming where and why
    skipped_rows: int
    skipped_files: int
    superseded: tuple[str, ...]  # rows replaced by another row of the same cell

    def report(self) -> list[str]:
        """What was read and what was set aside, one line each (stderr and the index page)."""
        lines = [
            f"read {self.rows_read} row(s) from {len(self.files) - self.skipped_files} file(s)"
            + (f" ({self.skipped_files} more file(s) skipped)" if self.skipped_files else "")
            + "; "
            f"{len(self.frame)} cell(s) used, {self.skipped_rows} row(s) skipped, "
            f"{len(self.superseded)} row(s) superseded by another row of the same cell"
        ]
        lines += [f"skipped: {p}" for p in self.skipped]
        lines += [f"superseded: {p}" for p in self.superseded]
        return lines


def find_csvs(inputs: Sequence[Path]) -> list[Path]:
    """Raw CSVs of run folders (`RUN/raw/*.csv`) and CSV files given directly.

    `*.superseded.csv` files hold rows a resumed run re-measured: they are not results.
    """
    if not inputs:
        raise UsageError("", "give at least one run folder or raw CSV")
    found: list[Path] = []
    for path in inputs:
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            raw = path / "raw"
            files = sorted(p for p in raw.glob("*.csv") if not p.name.endswith(".superseded.csv"))
            if not files:
                raise UsageError(str(path), f"no raw CSVs (looked for {raw}/*.csv)")
            found.extend(files)
        else:
            raise UsageError(str(path), "no such file or folder")
    return list(dict.fromkeys(found))


def default_out(inputs: Sequence[Path]) -> Path | None:
    """The one run folder all inputs belong to (RUN or RUN/raw/x.csv), else None."""
    runs = set()
    for path in inputs:
        if path.is_dir():
            runs.add(path.resolve())
        elif path.parent.name == "raw":
            runs.add(path.parent.parent.resolve())
        else:
            return None
    return runs.pop() if len(runs) == 1 else None


@dataclass
class _Read:
    rows: list[dict[str, str]] = field(default_factory=list)
    seen: int = 0  # data rows met, usable or not
    skipped_files: int = 0
    problems: list[str] = field(default_factory=list)

    def skip_file(self, path: Path, why: str) -> None:
        self.skipped_files += 1
        self.problems.append(f"{path}: {why} (file skipped)")


def _read_files(files: Sequence[Path]) -> _Read:
    out = _Read()
    for path in files:
        try:
            result = read_rows(path)
        except CsvFormatError as exc:
            out.skip_file(path, str(exc).removeprefix(f"{path}: "))
            continue
        except UnicodeDecodeError:
            out.skip_file(path, "not UTF-8 text")
            continue
        except OSError as exc:
            out.skip_file(path, f"cannot read ({exc.strerror})")
            continue
        if not result.rows and not result.problems and not path.read_text(encoding="utf-8").strip():
            out.skip_file(path, "empty file, not even a header")
            continue
        out.seen += len(result.rows) + result.skipped + result.repaired
        out.problems.extend(result.problems)
        for row, line in zip(result.rows, result.lines, strict=True):
            out.rows.append({**row, "source": f"{path}:{line}"})
    return out


def _row_problems(frame: pd.DataFrame) -> pd.Series:
    """The first problem of each row ("" if none), checked column by column."""
    problem = pd.Series("", index=frame.index, dtype=object)

    def flag(mask: pd.Series, text: pd.Series | str) -> None:
        fresh = mask & (problem == "")
        problem[fresh] = text if isinstance(text, str) else text[fresh]

    for col in REQUIRED_TEXT:
        flag(frame[col] == "", f"field {col}: empty")
    for col in NUMERIC_COLUMNS:
        raw = frame[col]
        number = pd.to_numeric(raw, errors="coerce")
        bad = (raw != "") & (number.isna() | number.isin([math.inf, -math.inf]))
        flag(bad, "field " + col + ": " + raw.map(repr) + " is not a number")
        if col in POSITIVE_COLUMNS:
            flag((raw != "") & (number <= 0), "field " + col + ": " + raw + " is not > 0")
    batch = pd.to_numeric(frame["batch_size"], errors="coerce")
    flag(batch.isna() | (batch < 1) | (batch != batch.round()), "field batch_size: not a positive integer")
    for col in REQUIRED_WHEN_OK:
        flag((frame["status"] == "ok") & (frame[col] == ""), f"field {col}: empty on an ok row")
    flag(
        ~frame["accuracy"].isin(ACCURACY_VALUES),
        "field accuracy: " + frame["accuracy"].map(repr) + f" is not one of {ACCURACY_VALUES[1:]} or empty",
    )
    return problem


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    for col in NUMERIC_COLUMNS:
        out[col] = pd.to_numeric(out[col], errors="coerce").astype(float)
    out["batch_size"] = out["batch_size"].astype(int)
    return out


def _dedupe(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One row per cell: an ok row beats a failed one, then the later start wins."""
    ranked = frame.assign(_ok=(frame["status"] == "ok").astype(int), _order=range(len(frame)))
    ranked = ranked.sort_values(["_ok", "started_at", "_order"], kind="stable")
    keep = ~ranked.duplicated(list(CELL_COLUMNS), keep="last")
    winners = ranked[keep].set_index(list(CELL_COLUMNS))["source"]
    notes = [
        f"{row.source}: {row.model} bs={row.batch_size} {row.mode} on {row.build} "
        f"({row.status}), replaced by {winners.loc[tuple(getattr(row, c) for c in CELL_COLUMNS)]}"
        for row in ranked[~keep].itertuples()
    ]
    kept = ranked[keep].sort_values("_order").drop(columns=["_ok", "_order"]).reset_index(drop=True)
    return kept, notes


def load(inputs: Sequence[Path]) -> Loaded:
    """Everything usable from the inputs; UsageError (exit 2) when nothing is."""
    files = find_csvs(inputs)
    read = _read_files(files)
    rows, seen, problems = read.rows, read.seen, read.problems
    skipped_rows = seen - len(rows)
    frame = pd.DataFrame(rows, dtype=object).fillna("") if rows else pd.DataFrame()
    if rows:
        if "variant" not in frame.columns:
            frame["variant"] = ""
        frame = frame.map(lambda v: v.strip() if isinstance(v, str) else v)
        problem = _row_problems(frame)
        bad = problem != ""
        problems.extend(
            f"{src}: {text}" for src, text in zip(frame["source"][bad], problem[bad], strict=True)
        )
        skipped_rows += int(bad.sum())
        frame = frame[~bad]
    if frame.empty:
        total = len(problems)
        detail = (
            f"{problems[0]}" + (f" (and {total - 1} more problem(s))" if total > 1 else "")
            if problems
            else ""
        )
        raise UsageError(
            "",
            f"nothing usable to merge in {len(files)} file(s), {seen} row(s)"
            + (f": {detail}" if detail else ""),
        )
    frame, superseded = _dedupe(_typed(frame))
    return Loaded(
        frame=frame,
        files=tuple(files),
        rows_read=seen,
        skipped=tuple(problems),
        skipped_rows=skipped_rows,
        skipped_files=read.skipped_files,
        superseded=tuple(superseded),
    )


# ---------------------------------------------------------------------------------------
# The merged study: typed cells, looked up by what the tables and plots ask for.


@dataclass(frozen=True)
class Gpu:
    """Where a row ran: the device type and its name (a CPU's model on CPU rows)."""

    device: str
    name: str

    @property
    def label(self) -> str:
        return self.name if self.device == "cuda" else f"{self.device.upper()}: {self.name}"


CUSTOM_PREFIX = "custom of "


def setup_variant(variant: str) -> str:
    """The part of a row's `variant` that sets it apart from other rows ("smoke"); the
    "custom of <base>" part belongs to the model, which is benchmarked beside the others."""
    return ", ".join(p for p in _variant_parts(variant) if not p.startswith(CUSTOM_PREFIX))


def custom_base(variant: str) -> str:
    """The base model of a custom configuration's row ("" for any other row)."""
    return next((p[len(CUSTOM_PREFIX) :] for p in _variant_parts(variant) if p.startswith(CUSTOM_PREFIX)), "")


def _variant_parts(variant: str) -> list[str]:
    return [p.strip() for p in variant.split(",") if p.strip()]


@dataclass(frozen=True)
class Setup:
    """What else must match for two rows to be comparable."""

    dtype: str
    scenario: str
    weights: str
    variant: str

    @property
    def guide_like(self) -> bool:
        """Comparable with the guide's figures: float32 inference of the real models."""
        return self.dtype == "float32" and self.scenario == "inference" and not self.variant

    @property
    def label(self) -> str:
        parts = [self.dtype, self.scenario, f"{self.weights} weights"]
        if self.variant:
            parts.append(f"{self.variant} models" if self.variant == "smoke" else self.variant)
        return ", ".join(p for p in parts if p.strip())


@dataclass(frozen=True)
class Measurement:
    """One cell's row, typed; durations in ms, None where not measured."""

    status: str
    error: str
    mean_ms: float | None
    median_ms: float | None
    ci_low_ms: float | None
    ci_high_ms: float | None
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    accuracy: str
    max_abs_diff: float | None
    source: str
    peak_mem_mb: float | None = None
    params_m: float | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def accuracy_failed(self) -> bool:
        return self.accuracy == "fail"


def _num(value: object) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def measurement_of(r: Any) -> Measurement:
    """A typed row (a `Loaded.frame.itertuples()` item) as a Measurement."""
    return Measurement(
        status=r.status,
        error=r.error,
        mean_ms=_num(r.mean_ms),
        median_ms=_num(r.median_ms),
        ci_low_ms=_num(r.ci95_low_ms),
        ci_high_ms=_num(r.ci95_high_ms),
        speedup=_num(r.speedup),
        speedup_low=_num(r.speedup_ci95_low),
        speedup_high=_num(r.speedup_ci95_high),
        accuracy=r.accuracy,
        max_abs_diff=_num(r.max_abs_diff),
        source=r.source,
        peak_mem_mb=_num(r.peak_mem_mb),
        params_m=_num(r.params_m),
    )


def ratio_interval(num: Measurement, den: Measurement) -> tuple[float | None, float | None]:
    """Bounds of num.median / den.median from the two medians' 95% CIs (None if absent)."""
    if None in (num.ci_low_ms, num.ci_high_ms, den.ci_low_ms, den.ci_high_ms):
        return None, None
    return num.ci_low_ms / den.ci_high_ms, num.ci_high_ms / den.ci_low_ms  # type: ignore[operator]


@dataclass(frozen=True)
class CellKey:
    build: str
    gpu: Gpu
    setup: Setup
    task: str
    model: str
    batch_size: int
    mode: str


class Study:
    """The merged rows, with the orders the tables follow (first appearance in the input)."""

    def __init__(self, frame: pd.DataFrame, kinds: dict[str, str]) -> None:
        self.kinds = kinds
        self.cells: dict[CellKey, Measurement] = {}
        self.torch: dict[str, list[str]] = {}
        self.bases: dict[str, str] = {}  # custom configuration -> its base model
        for r in frame.itertuples(index=False):
            if custom_base(r.variant):
                self.bases[r.model] = custom_base(r.variant)
            key = CellKey(
                build=r.build,
                gpu=Gpu(r.device, r.gpu_name),
                setup=Setup(r.dtype, r.scenario, r.weights, setup_variant(r.variant)),
                task=r.task,
                model=r.model,
                batch_size=int(r.batch_size),
                mode=r.mode,
            )
            self.cells[key] = measurement_of(r)
            versions = self.torch.setdefault(r.build, [])
            if r.torch_version and r.torch_version not in versions:
                versions.append(r.torch_version)
        keys = list(self.cells)
        builds = list(dict.fromkeys(k.build for k in keys))
        self.builds = sorted(builds, key=lambda b: (KIND_ORDER.index(self.kind(b)), builds.index(b)))
        self.gpus = list(dict.fromkeys(k.gpu for k in keys))
        self.setups = list(dict.fromkeys(k.setup for k in keys))
        self.models = list(dict.fromkeys((k.task, k.model) for k in keys))
        self.modes = list(dict.fromkeys(k.mode for k in keys))
        self.batch_sizes = sorted({k.batch_size for k in keys})

    def model_label(self, task: str, model: str) -> str:
        """`Task/Model`, with "(custom of <base>)" after a custom configuration's name."""
        base = self.bases.get(model)
        return f"{task}/{model}" + (f" ({CUSTOM_PREFIX}{base})" if base else "")

    def get(self, build: str, gpu: Gpu, setup: Setup, task: str, model: str, bs: int, mode: str):
        return self.cells.get(CellKey(build, gpu, setup, task, model, bs, mode))

    def keys_where(self, **match: object) -> list[CellKey]:
        return [k for k in self.cells if all(getattr(k, f) == v for f, v in match.items())]

    def torch_label(self, build: str) -> str:
        """`stable (torch 2.0.1+cu118)`: the build name and the torch it ran."""
        versions = self.torch.get(build) or []
        return f"{build} (torch {', '.join(versions)})" if versions else build

    def kind(self, build: str) -> str:
        return self.kinds.get(build, kind_from_name(build))


def kind_from_name(build: str) -> str:
    """A build's kind when the matrix does not say: by its name."""
    name = build.lower()
    if name.startswith("stable"):
        return "stable"
    if "nightly" in name:
        return "nightly"
    return "release"


def build_kinds(
    builds: Sequence[str], matrix_path: Path | None, explicit: bool
) -> tuple[dict[str, str], str]:
    """Each build's kind from matrix.yaml (builds.<name>.kind), else from its name.

    Returns the kinds and a one-line note on where they came from. A matrix given with
    --matrix must load; the default one may be absent or broken (the names then decide).
    """
    declared: dict[str, str] = {}
    note = ""
    if matrix_path is not None:
        try:
            declared = {name: spec.kind for name, spec in load_matrix(matrix_path).builds.items()}
        except (UsageError, OSError) as exc:
            if explicit:
                raise
            note = f"could not read {matrix_path} ({exc}); "
    kinds = {b: declared.get(b, kind_from_name(b)) for b in builds}
    by_name = [b for b in builds if b not in declared]
    source = f"kinds from {matrix_path}" if declared else "kinds"
    if by_name:
        source += f"{' and' if declared else ''} by name for: {', '.join(by_name)}"
    return kinds, note + source
