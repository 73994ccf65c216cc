"""The guide's published figures (results/reference/*.csv): load, validate, look up.

Host side only. The merge uses these to put the guide's speed-up beside ours for the same
GPU class, torch build kind, compile mode, batch size and model.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from suite.errors import UsageError

REFERENCE_DIR = Path(__file__).resolve().parents[2] / "results" / "reference"
COLUMNS: tuple[str, ...] = (
    "task",
    "model",
    "GPU",
    "batch size",
    "with torch.compile",
    "without torch.compile",
    "build",
    "mode",
    "table",
    "erratum",
)
# GPU classes the guide measured; a run's gpu_name matches one by word ("NVIDIA A100-SXM4-40GB").
GPU_CLASSES: tuple[str, ...] = ("A100", "V100", "T4")
_GPU_RES = {name: re.compile(rf"(?<![A-Za-z0-9]){name}(?![0-9])", re.IGNORECASE) for name in GPU_CLASSES}
# Which of the guide's builds to compare a build of each kind with, in order of preference:
# a nightly with the guide's nightly, a stable with its 2.0.1, anything else with 2.0.1 first.
KIND_PREFERENCE: dict[str, tuple[str, ...]] = {
    "stable": ("stable",),
    "nightly": ("nightly",),
}
OTHER_KINDS_PREFERENCE: tuple[str, ...] = ("stable", "nightly")


@dataclass(frozen=True)
class GuideFigure:
    """One row of the guide's tables. A duration of None means the guide printed OOM."""

    task: str
    model: str
    gpu: str
    batch_size: int
    compiled_ms: float | None
    eager_ms: float | None
    build: str
    mode: str
    table: str
    erratum: str
    source: str

    @property
    def kind(self) -> str:
        """The guide's builds: 2.0.1 (stable) and 2.1.0dev (nightly)."""
        return "nightly" if "dev" in self.build else "stable"

    @property
    def speedup(self) -> float | None:
        """Ratio of the guide's means (it published no medians and no spread)."""
        if self.compiled_ms is None or self.eager_ms is None:
            return None
        return self.eager_ms / self.compiled_ms


def normalize(name: str) -> str:
    """Model/task names compared loosely: "Conditional DETR" == "conditional-detr"."""
    return re.sub(r"[^a-z0-9]", "", name.lower())


def gpu_class(gpu_name: str) -> str | None:
    """The guide's GPU class a device name belongs to, if any ("Tesla T4" -> "T4")."""
    for name, pattern in _GPU_RES.items():
        if pattern.search(gpu_name):
            return name
    return None


def _duration(value: str, where: str) -> float | None:
    if value.strip().upper() == "OOM":
        return None
    try:
        number = float(value)
    except ValueError:
        raise UsageError(where, f"{value!r} is neither a duration in ms nor OOM") from None
    if not number > 0 or number == float("inf"):
        raise UsageError(where, f"{value!r} is not a positive duration")
    return number


def read_reference_csv(path: Path) -> list[GuideFigure]:
    """One reference file; any malformed row is an error (this is curated data)."""
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise UsageError(str(path), f"header lacks column(s) {', '.join(missing)}")
        figures = []
        for row in reader:
            where = f"{path}:{reader.line_num}"
            if None in row or any(row[c] is None for c in COLUMNS):
                raise UsageError(where, f"expected {len(reader.fieldnames or [])} fields")
            batch = row["batch size"].strip()
            if not batch.isdigit() or int(batch) < 1:
                raise UsageError(f"{where}: batch size", f"{batch!r} is not a positive integer")
            figures.append(
                GuideFigure(
                    task=row["task"].strip(),
                    model=row["model"].strip(),
                    gpu=row["GPU"].strip(),
                    batch_size=int(batch),
                    compiled_ms=_duration(row["with torch.compile"], f"{where}: with torch.compile"),
                    eager_ms=_duration(row["without torch.compile"], f"{where}: without torch.compile"),
                    build=row["build"].strip(),
                    mode=row["mode"].strip(),
                    table=row["table"].strip(),
                    erratum=row["erratum"].strip(),
                    source=where,
                )
            )
    return figures


@dataclass(frozen=True)
class Reference:
    """All of the guide's figures, indexed for lookup."""

    figures: tuple[GuideFigure, ...]

    @staticmethod
    def load(folder: Path = REFERENCE_DIR) -> Reference:
        """Every *.csv in `folder`; an absent folder gives an empty reference."""
        if not folder.is_dir():
            return Reference(())
        figures: list[GuideFigure] = []
        for path in sorted(folder.glob("*.csv")):
            figures.extend(read_reference_csv(path))
        return Reference(tuple(figures))

    def table_for(self, gpu_name: str, build_kind: str, mode: str, batch_size: int) -> str | None:
        """The guide table comparable to ours (same GPU class, build kind, mode, batch size)."""
        rows = self._candidates(gpu_name, build_kind, mode, batch_size)
        return rows[0].table if rows else None

    def lookup(
        self, gpu_name: str, build_kind: str, mode: str, batch_size: int, task: str, model: str
    ) -> GuideFigure | None:
        """The guide's figure for this model in the table `table_for` picks (None if absent)."""
        rows = self._candidates(gpu_name, build_kind, mode, batch_size)
        if not rows:
            return None
        table = rows[0].table
        for fig in rows:
            if fig.table == table and (normalize(fig.task), normalize(fig.model)) == (
                normalize(task),
                normalize(model),
            ):
                return fig
        return None

    def _candidates(self, gpu_name: str, build_kind: str, mode: str, batch_size: int) -> list[GuideFigure]:
        cls = gpu_class(gpu_name)
        if cls is None:
            return []
        for kind in KIND_PREFERENCE.get(build_kind, OTHER_KINDS_PREFERENCE):
            rows = [
                f
                for f in self.figures
                if f.gpu == cls and f.kind == kind and f.mode == mode and f.batch_size == batch_size
            ]
            if rows:
                return rows
        return []
