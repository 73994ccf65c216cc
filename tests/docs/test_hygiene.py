"""The user docs against what they describe: no issue numbers (a reader has no issue tracker
open; the docs say what is, not which issue made it), and every artifact name they give is one
the nightly workflow uploads, so `gh run download -n NAME` as written finds it.

docs/design.md is left out of the first check: it is the map of the code for those who change
it, and its rows may name the issue a module came from.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
USER_DOCS = [ROOT / "README.md", *(p for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "design.md")]
ISSUE = re.compile(r"\b[Ii]ssues?\s+#?\d+")
# an artifact name as the docs write it: bench-<run id>..., history-<run id>..., raw-<gpu>-shard-...,
# night-attempt-<a>
ARTIFACT = re.compile(
    r"(?:bench|history)-<(?:run id|run-id|id)>[\w<>\[\]-]*|raw-[a-z0-9<>]+-shard-[\w<>\[\]-]+"
    r"|night-attempt-[\w<>]+"
)


def test_user_docs_name_no_issue_numbers() -> None:
    found = []
    for path in USER_DOCS:
        text = path.read_text(encoding="utf-8")
        for match in ISSUE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(ROOT)}:{line}: {match.group(0)!r}")
    assert not found, "user docs name issues: " + "; ".join(found)


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
