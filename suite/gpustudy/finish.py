"""The host side of the GPU study: the files every call brought back from the GPU machine (each
attempt of each call, a tarball or not) into one results folder: the run folders as the calls left
them, the calls' logs and summaries in the order they ran, the merged tables and plots
(suite.report.publish), and a README whose every figure is read from those files
(suite.gpustudy.readme).

Nothing is written before the host is checked (pandas, pyarrow, matplotlib), and a `finish` that
fails removes what it wrote: nothing half-written is left to block the next one. Paths of the GPU
machine (its checkout, its Python's site-packages)
are taken out of every text file copied, so that the results say nothing of a machine nobody
else has.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite.errors import UsageError, first_line
from suite.gpustudy.packing import unpack
from suite.results import read_rows, slug

HOST_PACKAGES = ("pandas", "pyarrow")  # the merge's tables and the samples' Parquet file
PLOT_PACKAGES = ("matplotlib",)
WORK = "WORK"  # what the GPU machine's run-folder root reads as in the results
_CALL_FILE = re.compile(r"^call(\d+)(?:\.attempt)?\.(json|log|md|tar\.gz)$")
_SITE = re.compile(r"/[^\s'\"`()]*?/site-packages/")
TEXT_SUFFIXES = (".log", ".md", ".json", ".txt")


def require_host(plots: bool = True) -> None:
    """One line, exit 2, before anything is written, where this Python lacks what the merge needs
    (pandas raises ImportError, not only ModuleNotFoundError, when its own needs are broken)."""
    for name in (*HOST_PACKAGES, *(PLOT_PACKAGES if plots else ())):
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise UsageError(
                "gpu-study finish",
                f"needs {name}, which {sys.executable} cannot import ({first_line(str(exc))}): "
                "use the merge's Python (`nox -s merge` makes .nox/merge/bin/python) or "
                "`pip install pandas pyarrow matplotlib` into this one; nothing was written",
            ) from None


@dataclass
class Attempt:
    """One run of one call on the GPU machine, as its files came back."""

    call: int
    summary: dict[str, Any]
    files: list[Path]  # its log, summary, table, and what its command wrote beside them (.txt)
    archive: Path | None = None
    number: int = 0  # its place in the order the attempts ran, from 1
    runs: dict[str, str] = field(default_factory=dict)  # run id in its tarball -> folder in the results

    @property
    def label(self) -> str:
        return f"{self.number}-call{self.call}"

    @property
    def started_at(self) -> str:
        return str(self.summary.get("started_at", ""))


def _read_summary(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        int(data["call"])
        return data  # type: ignore[no-any-return]
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(str(path), "not a call summary the gpu-study wrote") from None


def _files(inputs: Sequence[Path]) -> list[Path]:
    out: list[Path] = []
    for path in inputs:
        if path.is_dir():
            out += sorted(p for p in path.rglob("*") if p.is_file())
        elif path.is_file():
            out.append(path)
        else:
            raise UsageError(str(path), "no such file or folder")
    return out


def attempts_of(inputs: Sequence[Path], staging: Path) -> list[Attempt]:
    """Every attempt among the inputs (the files of one call in one folder, as the window's
    `files_at` holds them), its tarball unpacked under `staging`, in the order they ran."""
    groups: dict[tuple[Path, int], list[Path]] = {}
    extras: dict[Path, list[Path]] = {}
    for path in _files(inputs):
        match = _CALL_FILE.match(path.name)
        if match:
            groups.setdefault((path.parent, int(match.group(1))), []).append(path)
        elif path.suffix == ".txt":
            extras.setdefault(path.parent, []).append(path)
    found = []
    for (folder, call), files in sorted(groups.items()):
        archive = next((p for p in files if p.name.endswith(".tar.gz")), None)
        beside = next((p for p in files if p.name == f"call{call}.json"), None)
        inside = None
        if archive is not None:
            into = staging / f"{len(found)}"
            names = unpack(archive, into)
            inside = into / f"call{call}.json"
            attempt = Attempt(call, {}, [], archive)
            attempt.runs = {name: str(into / name) for name in names}
        else:
            attempt = Attempt(call, {}, [])
        summary_path = beside or (inside if inside and inside.exists() else None)
        if summary_path is None:
            raise UsageError(
                str(folder), f"call {call}'s files hold no call{call}.json: which call ran is unknown"
            )
        attempt.summary = _read_summary(summary_path)  # the one beside the tarball is the later
        attempt.files = sorted(p for p in files if p is not archive) + extras.pop(folder, [])
        found.append(attempt)
    if not found:
        raise UsageError(
            str(inputs[0]), "no callN.json or callN.tar.gz here: give the files the calls brought back"
        )
    found.sort(key=lambda a: (a.started_at, a.call))
    for i, attempt in enumerate(found, 1):
        attempt.number = i
    return found


def _row_keys(folder: Path) -> set[tuple[str, ...]]:
    keys = set()
    for csv_path in folder.glob("raw/*.csv"):
        for row in read_rows(csv_path).rows:
            keys.add((row["model"], row["batch_size"], row["mode"], row["scenario"], row["started_at"]))
    return keys


def place_runs(attempts: Sequence[Attempt]) -> dict[str, Path]:
    """{folder name in the results: unpacked run folder}. An attempt that went on from an earlier
    one on a machine still held brought back all of its rows and more: it replaces it. One that started
    afresh (a new machine) is kept beside it as `<run id>-run<k>`, its k-th attempt."""
    placed: dict[str, Path] = {}
    owner: dict[str, str] = {}  # run id -> the folder name that holds its latest superset
    seen: dict[str, int] = {}
    for attempt in attempts:
        for run_id, src in sorted(attempt.runs.items()):
            path = Path(src)
            earlier = owner.get(run_id)
            if earlier is not None and _row_keys(placed[earlier]) <= _row_keys(path):
                placed[earlier] = path  # a continuation: its folder holds the earlier rows too
                attempt.runs[run_id] = earlier
                continue
            seen[run_id] = seen.get(run_id, 0) + 1
            name = run_id if seen[run_id] == 1 else f"{run_id}-run{seen[run_id]}"
            placed[name], owner[run_id], attempt.runs[run_id] = path, name, name
    return placed


def machine_roots(attempts: Sequence[Attempt]) -> list[str]:
    """The GPU machine's run-folder roots, as the steps' commands name them (`--out DIR`)."""
    roots = set()
    for attempt in attempts:
        for step in attempt.summary.get("steps", []):
            match = re.search(r"--out (\S+)", str(step.get("command", "")))
            if match and match.group(1).startswith("/"):
                roots.add(match.group(1).rstrip("/"))
    return sorted(roots, key=len, reverse=True)


def scrub(text: str, roots: Sequence[str]) -> str:
    """The text without the GPU machine's paths: its run-folder root reads WORK, its Python's
    site-packages `<site-packages>`."""
    for root in roots:
        text = text.replace(root, WORK)
    return _SITE.sub("<site-packages>/", text)


def _copy_scrubbed(src: Path, dst: Path, roots: Sequence[str]) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.suffix in TEXT_SUFFIXES:
        dst.write_text(scrub(src.read_text(encoding="utf-8", errors="replace"), roots), encoding="utf-8")
    else:
        shutil.copy2(src, dst)


def default_folder(rows: Sequence[dict[str, str]], root: Path) -> Path:
    """results/<date>-<gpu>-torch<major.minor>: the date of the first cell, the GPU's model (its
    name without the vendor, once) and torch of the rows."""
    if not rows:
        raise UsageError("-o", "the calls recorded no row: nothing to name the results folder after")
    first = min(rows, key=lambda r: r.get("started_at", ""))
    date = first.get("started_at", "")[:10] or "undated"
    gpu = slug(first.get("gpu_name") or first.get("device", "unknown")).removeprefix("nvidia-")
    torch = ".".join(first.get("torch_version", "").split("+")[0].split(".")[:2]) or "unknown"
    return root / f"{date}-{gpu}-torch{torch}"


def _rows_of(folders: Sequence[Path]) -> list[dict[str, str]]:
    return [row for folder in folders for p in sorted(folder.glob("raw/*.csv")) for row in read_rows(p).rows]


@dataclass(frozen=True)
class FinishArgs:
    inputs: tuple[Path, ...]
    out: Path | None
    reference: Path
    matrix: Path
    plots: bool = True
    analysis: Path | None = None  # the hand-written section, Markdown, put in the README as it is
    beside: Path | None = None  # an earlier study's results folder, its cells set beside these


def finish(args: FinishArgs) -> Path:
    """Unpack, copy, merge and write the README (all of it removed again if any of it fails); the
    results folder."""
    if args.analysis is not None and not args.analysis.is_file():
        raise UsageError("--analysis", f"{args.analysis}: no such file")
    if args.beside is not None and not (args.beside / "calls").is_dir():
        raise UsageError("--beside", f"{args.beside}: not a results folder of `gpu-study finish` (no calls/)")
    with tempfile.TemporaryDirectory(prefix="gpu-study-") as tmp:
        attempts = attempts_of(args.inputs, Path(tmp))
        placed = place_runs(attempts)
        rows = _rows_of([p for p in placed.values() if any(p.glob("raw/*.csv"))])
        folder = args.out or default_folder(rows, args.matrix.parent / "results")
        if folder.exists() and any(folder.iterdir()):
            raise UsageError("-o", f"{folder} exists and is not empty: give another -o, or remove it")
        existed = folder.exists()
        folder.mkdir(parents=True, exist_ok=True)
        try:
            _build(args, attempts, placed, folder)
        except BaseException:  # nothing half-written stays to block the next attempt
            shutil.rmtree(folder, ignore_errors=True)
            if existed:
                folder.mkdir()
            raise
    return folder


def _build(args: FinishArgs, attempts: Sequence[Attempt], placed: dict[str, Path], folder: Path) -> None:
    from suite.gpustudy.readme import Sources, render_readme
    from suite.report.paths import shown
    from suite.report.publish import run_merge

    roots = machine_roots(attempts)
    for name, src in placed.items():
        for path in sorted(p for p in src.rglob("*") if p.is_file()):
            _copy_scrubbed(path, folder / name / path.relative_to(src), roots)
    for attempt in attempts:
        for path in attempt.files:
            _copy_scrubbed(path, folder / "calls" / attempt.label / path.name, roots)
        record = {"attempt": attempt.number, "source": attempt.archive.name if attempt.archive else None}
        record["runs"] = dict(sorted(attempt.runs.items()))
        (folder / "calls" / attempt.label).mkdir(parents=True, exist_ok=True)
        (folder / "calls" / attempt.label / "attempt.json").write_text(
            json.dumps(record, indent=1) + "\n", encoding="utf-8"
        )
    merged = sorted(folder / name for name in placed if any((folder / name).glob("raw/*.csv")))
    if not merged:
        raise UsageError(str(args.inputs[0]), "the calls brought back no raw CSV: nothing to merge")
    result = run_merge(merged, folder, args.matrix, False, args.reference, plots=args.plots)
    analysis = args.analysis.read_text(encoding="utf-8") if args.analysis else None
    here = f"{folder.resolve()}/"  # the merge names superseded rows by absolute path: this host's
    project = f"{shown(folder)}/"  # and report.json its inputs relative to the project
    for page in [*folder.glob("tables/*.md"), *folder.glob("tables/*.html"), *folder.glob("tables/*.json")]:
        text = page.read_text(encoding="utf-8")
        clean = scrub(text.replace(here, "").replace(project, ""), roots)
        if clean != text:
            page.write_text(clean, encoding="utf-8")
    report = tuple(line.replace(here, "") for line in result.loaded.report())
    sources = Sources(folder, args.matrix, args.reference, report, args.beside)
    (folder / "README.md").write_text(render_readme(sources, args.inputs, analysis), encoding="utf-8")
