"""The user-facing words against what they describe: no issue numbers (a reader has no issue
tracker open; the README, the docs, matrix.yaml and the command line's help say what is, not
which issue made it), no words of the machines the project was developed on instead of its
users' (a GPU is held for a short window, never "lent"), no scratch paths where a placeholder
fits, the pages agreeing on what was run on a GPU, and every artifact name the docs give one the
nightly workflow uploads, so `gh run download -n NAME` as written finds it.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from suite.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
USER_FILES = [*USER_DOCS, ROOT / "matrix.yaml"]
ISSUE = re.compile(r"\b[Ii]ssues?\s+#?\d+")
# the development machines' words: a GPU "lent" (or lending one), the tools that lent it
MACHINE_WORDS = re.compile(
    r"\b(?:lent|lend(?:s|ing)?|borrowed)\b|\bdevice tool\b|\bgive_back\b|\bbudget_left|\bworkplace\b",
    re.IGNORECASE,
)
SCRATCH = re.compile(r"(?<![\w.])/tmp/")
# an artifact name as the docs write it: bench-<run id>..., history-<run id>..., raw-<gpu>-shard-...,
# night-attempt-<a>
ARTIFACT = re.compile(
    r"(?:bench|history)-<(?:run id|run-id|id)>[\w<>\[\]-]*|raw-[a-z0-9<>]+-shard-[\w<>\[\]-]+"
    r"|night-attempt-[\w<>]+"
)


def matches(pattern: re.Pattern[str], paths: list[Path]) -> list[str]:
    """Each match as `file:line: 'text'`."""
    found = []
    for path in paths:
        text = path.read_text(encoding="utf-8")
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}")
    return found


def help_texts() -> str:
    """Every verb's `--help`, as the command line prints it (sub-verbs too)."""
    texts, parsers = [], [build_parser()]
    while parsers:
        parser = parsers.pop()
        texts.append(parser.format_help())
        for action in parser._actions:  # argparse keeps its sub-parsers only here
            if isinstance(action, argparse._SubParsersAction):
                parsers += list(action.choices.values())
    return "\n".join(texts)


def test_user_files_name_no_issue_numbers() -> None:
    found = matches(ISSUE, USER_FILES)
    assert not found, "user-facing files name issues: " + "; ".join(found)


def test_help_texts_name_no_issue_numbers() -> None:
    text = help_texts()
    assert "--run-noise-pct" in text and "history" in text  # the verbs' own flags were read
    assert not ISSUE.findall(text), ISSUE.findall(text)


@pytest.mark.parametrize("pattern", [MACHINE_WORDS, SCRATCH], ids=["machine words", "scratch paths"])
def test_user_files_speak_of_the_project_and_its_users_machines(pattern: re.Pattern[str]) -> None:
    found = matches(pattern, USER_FILES)
    assert not found, "; ".join(found)


def test_the_pages_agree_that_the_gpu_runs_exist() -> None:
    """The committed H200 runs exist: no page says that no GPU ran what they measured (the
    CUDA-graph columns and the rows' provisional GPU noise came from them)."""
    runs = sorted(p.name for p in (ROOT / "results").glob("*-h200-*") if (p / "README.md").exists())
    assert runs, "the committed GPU runs"
    claims = {
        "phases-energy.md": r"[Uu]nverified on a GPU|no GPU was at hand",
        "intervals.md": r"[Nn]o GPU was at hand",
    }
    found = [
        f"{name}: {m}"
        for name, rx in claims.items()
        for m in re.findall(rx, (ROOT / "docs" / name).read_text())
    ]
    assert not found, found


def workflow_artifacts() -> set[str]:
    """The names bench-nightly.yml uploads under, in the docs' placeholders."""
    text = (ROOT / ".github" / "workflows" / "bench-nightly.yml").read_text(encoding="utf-8")
    names = set(re.findall(r"^\s+name: ((?:bench|history|night)-\S*\$\{\{.*)$", text, re.M))
    upload = re.search(r"^\s+UPLOAD: (.*)$", text, re.M)
    assert upload is not None and len(names) == 2, names
    names.add(upload.group(1))
    words = {
        "${{ env.RUN_ID }}": "<run id>",
        "${{ github.run_attempt }}": "<a>",
        "${{ matrix.artifact }}": "raw-<gpu>-shard-<i>-of-<n>",  # nightly.py's Job.artifact
    }
    for key, value in words.items():
        names = {n.replace(key, value) for n in names}
    assert all("${{" not in n for n in names), names
    return names


def as_written(name: str) -> str:
    """A name from the docs in the workflow's placeholders: an example GPU, shard or attempt
    number stands for its placeholder; the uploads made while a job runs (`-rows-<r>`) are the
    job's name and a suffix (shard_rows.py)."""
    name = re.sub(r"<(?:run-id|id)>", "<run id>", name)
    name = re.sub(r"^raw-[a-z0-9]+-shard-\d+-of-\d+", "raw-<gpu>-shard-<i>-of-<n>", name)
    name = re.sub(r"-attempt-\d+", "-attempt-<a>", name)
    return re.sub(r"(?:\[-rows-<\w+>\]|-rows-<\w+>)$", "", name)


def test_artifact_names_in_the_docs_are_the_workflows() -> None:
    names = workflow_artifacts()
    assert names == {
        "raw-<gpu>-shard-<i>-of-<n>-attempt-<a>",
        "bench-<run id>-attempt-<a>",
        "night-attempt-<a>",  # the night the plan job handed the bench jobs, for the run's re-runs
    }
    said = {}
    for path in USER_DOCS:
        text = re.sub(r"\s*\n\s*", " ", path.read_text(encoding="utf-8"))  # a name wrapped at its space
        for match in ARTIFACT.finditer(text):
            said[match.group(0)] = path.relative_to(ROOT)
    wrong = {f"{where}: {name}" for name, where in said.items() if as_written(name) not in names}
    assert not wrong, f"artifact names the workflow does not upload: {sorted(wrong)}"
    shown = {as_written(n) for n in said}
    assert names <= shown, f"the docs never name {sorted(names - shown)}"
