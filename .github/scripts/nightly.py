"""Helpers of the nightly benchmark workflow (.github/workflows/bench-nightly.yml).

    python .github/scripts/nightly.py matrix                      # setup job: run id + job matrix
    python .github/scripts/nightly.py collect ARTIFACTS RUN_DIR   # merge job: gather raw CSVs

`matrix` reads GPU_LABELS (a JSON list of runner label sets) and SHARDS from the
environment, so no workflow input is ever pasted into a script, and writes `run_id`,
`matrix` and `shards` to $GITHUB_OUTPUT. `collect` gathers the downloaded artifacts'
raw CSVs into RUN_DIR/raw/, refusing two files of one name (two label sets that reach
the same GPU model would overwrite each other's results), and reports on the job
summary which jobs delivered. Standard library only: it runs before anything is
installed. Errors are one `::error::` line and exit status 1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

GENERIC_LABELS = frozenset({"self-hosted", "linux", "x64", "gpu"})
MAX_JOBS = 256  # GitHub's limit for one matrix
_SLUG = re.compile(r"[^a-z0-9.]+")
EXAMPLE = '[["self-hosted", "linux", "gpu", "a100"], ["self-hosted", "linux", "gpu", "t4"]]'


class Invalid(ValueError):
    """A workflow input that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class Job:
    name: str  # short GPU name from the labels, e.g. "a100"
    labels: tuple[str, ...]
    shard: int
    shards: int

    @property
    def artifact(self) -> str:
        return f"raw-{self.name}-shard-{self.shard}-of-{self.shards}"

    def as_matrix_entry(self) -> dict[str, object]:
        return {
            "name": self.name,
            "labels": list(self.labels),
            "shard": self.shard,
            "shards": self.shards,
            "artifact": self.artifact,
        }


def label_sets(text: str) -> list[tuple[str, ...]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Invalid(f"gpu_labels: not JSON ({exc.msg}); e.g. {EXAMPLE}") from None
    if not isinstance(value, list) or not value or not all(isinstance(s, list) and s for s in value):
        raise Invalid(f"gpu_labels: must be a non-empty list of non-empty label lists, e.g. {EXAMPLE}")
    for labels in value:
        if not all(isinstance(label, str) and label.strip() for label in labels):
            raise Invalid(f"gpu_labels: {labels}: every label must be a non-empty string")
    return [tuple(labels) for labels in value]


def short_name(labels: tuple[str, ...]) -> str:
    """What tells this label set apart ("a100"), for job and artifact names."""
    specific = [label for label in labels if label.lower() not in GENERIC_LABELS] or list(labels)
    return _SLUG.sub("-", "-".join(specific).lower()).strip("-") or "runner"


def shard_count(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise Invalid(f"shards: {text!r} is not a whole number >= 1")
    return int(text)


def plan_jobs(gpu_labels: str, shards: str) -> list[Job]:
    """One job per label set x shard, with distinct names."""
    sets, count = label_sets(gpu_labels), shard_count(shards)
    names = [short_name(labels) for labels in sets]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise Invalid(f"gpu_labels: label sets share the name {twice[0]!r}: list each GPU type once")
    if len(sets) * count > MAX_JOBS:
        raise Invalid(f"{len(sets)} label sets x {count} shards is over GitHub's {MAX_JOBS} jobs per matrix")
    return [Job(n, ls, i, count) for n, ls in zip(names, sets, strict=True) for i in range(1, count + 1)]


def run_id(now: datetime, github_run_id: str) -> str:
    """Shared by every job of one workflow run (a re-run of failed jobs keeps it)."""
    return f"nightly-{now:%Y%m%d-%H%M}-gh{github_run_id}"


def cmd_matrix() -> None:
    jobs = plan_jobs(os.environ.get("GPU_LABELS", ""), os.environ.get("SHARDS", ""))
    rid = run_id(datetime.now(timezone.utc), os.environ.get("GITHUB_RUN_ID", "local"))
    outputs = {
        "run_id": rid,
        "matrix": json.dumps({"include": [j.as_matrix_entry() for j in jobs]}),
        "shards": str(jobs[0].shards),
    }
    with open(os.environ.get("GITHUB_OUTPUT", os.devnull), "a", encoding="utf-8") as fh:
        fh.writelines(f"{k}={v}\n" for k, v in outputs.items())
    for k, v in outputs.items():
        print(f"{k}: {v}")


def collect(artifacts: Path, run_dir: Path, expected: list[str]) -> list[str]:
    """Copy every `<artifact>/raw/*.csv` into run_dir/raw/; return summary lines."""
    raw = run_dir / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    origin: dict[str, str] = {}
    lines = ["| job artifact | raw CSVs |", "| --- | --- |"]
    for name in expected:
        files = sorted((artifacts / name / "raw").glob("*.csv"))
        for f in files:
            if f.name in origin:
                raise Invalid(
                    f"{f.name} comes from both {origin[f.name]} and {name}: two label sets ran on the "
                    "same GPU model; list each GPU type once in gpu_labels"
                )
            origin[f.name] = name
            shutil.copy2(f, raw / f.name)
        shown = ", ".join(f"`{f.name}`" for f in files) or "none (the job failed, or its shard was empty)"
        lines.append(f"| {name} | {shown} |")
    if not origin:
        raise Invalid(f"no raw CSV in {artifacts}: every benchmark job failed before writing a row")
    return lines


def cmd_collect(artifacts: str, run_dir: str) -> None:
    matrix = json.loads(os.environ.get("MATRIX", "") or '{"include": []}')
    expected = [entry["artifact"] for entry in matrix["include"]]
    lines = collect(Path(artifacts), Path(run_dir), expected)
    text = "\n".join(["## Benchmark jobs", "", *lines, ""]) + "\n"
    print(text)
    with open(os.environ.get("GITHUB_STEP_SUMMARY", os.devnull), "a", encoding="utf-8") as fh:
        fh.write(text)


def main(argv: list[str]) -> int:
    try:
        if argv == ["matrix"]:
            cmd_matrix()
        elif len(argv) == 3 and argv[0] == "collect":
            cmd_collect(argv[1], argv[2])
        else:
            print("usage: nightly.py matrix | nightly.py collect ARTIFACTS RUN_DIR", file=sys.stderr)
            return 2
    except Invalid as exc:
        print(f"::error::{exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
