"""Re-runs and cut-short shards lose nothing: .github/scripts/shard_rows.py's uploads
while a shard runs, the restore a re-run starts from, the merge job's gathering, and one shard
killed in its first attempt and finished by its second, every cell once.

The shard is the real `suite run` with the stub worker and environment of tests/support (no
torch), as tests/e2e/test_shard_simulation.py runs it; the artifacts are folders laid out as
actions/download-artifact leaves them (one per upload, named for it).
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from support import STUB_ENVIRONMENT, nightly_script, write_stub_worker

from suite.results import KEY_COLUMNS, one_per_cell, read_rows

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".github" / "scripts"))
import shard_rows  # noqa: E402

nightly = nightly_script()
DRIVER = """
import dataclasses, json, sys
from suite.cli import main
from suite.measure.provenance import Environment
from suite.run import preflight, runner
stub, environment = sys.argv[1:3]
preflight.probe = lambda device, python=None: Environment(**json.loads(environment))
preflight.check_models = lambda *args, **kwargs: None  # no transformers child: the stub runs no model
run_cells = runner.run_cells
runner.run_cells = lambda sweep: run_cells(dataclasses.replace(sweep, python=stub))
sys.exit(main(["run", *sys.argv[3:]]))
"""
# four cells, the job's whole shard; the stub hangs in the third in the first attempt (one cell
# a process: the stub is a one-cell worker)
SELECTION = ["--profile", "smoke", "--models", "ViT,ResNet,BeiT,DETR", "--modes", "eager", "--device", "cpu",
             "--schedule", "serial"]  # fmt: skip
JOB = "raw-a100-shard-1-of-1"


def start(stub: Path, out: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    environment = json.dumps(dataclasses.asdict(STUB_ENVIRONMENT))
    args = [
        *SELECTION,
        "--iterations",
        "3",
        "--warmup",
        "1",
        "--out",
        str(out),
        "--run-id",
        "gh7",
        "--shard",
        "1/1",
    ]
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(stub), environment, *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def download(artifacts: Path, name: str, content: bytes) -> None:
    """What actions/download-artifact leaves for one upload: its zip unpacked in <name>/."""
    with zipfile.ZipFile(io.BytesIO(content)) as archive:
        archive.extractall(artifacts / name)


def test_a_shard_killed_in_attempt_1_is_finished_by_attempt_2_every_cell_once(tmp_path: Path) -> None:
    stub = write_stub_worker(tmp_path / "stub-worker")
    artifacts = tmp_path / "artifacts"
    # attempt 1: the runner dies (preempted, the job's time cap) while its third cell runs
    first = tmp_path / "attempt-1" / "results"
    started = tmp_path / "third-started"
    proc = start(stub, first, {"STUB_SLOW_FAIL": "*/002-*", "STUB_STARTED": str(started),
                               "STUB_FAIL_AFTER": str(tmp_path / "never")})  # fmt: skip
    # the night bench-nightly's host resolved for the run (suite.sessions.nightly.write_manifest)
    manifest = '{"nightly": {"nightly-current": {"date": "20261125"}}}\n'
    (first / "gh7").mkdir(parents=True)
    (first / "gh7" / "manifest.json").write_text(manifest)
    uploader = shard_rows.Uploader(first / "gh7", f"{JOB}-attempt-1", lambda n, d: download(artifacts, n, d))
    deadline = time.monotonic() + 120
    while not started.exists() and time.monotonic() < deadline:
        uploader.tick(time.monotonic())  # the background uploader, as it polls
        time.sleep(0.2)
    assert started.exists(), proc.communicate(timeout=5)
    assert uploader.tick(time.monotonic()) is None  # two rows: not yet three new ones...
    assert (
        uploader.tick(time.monotonic(), final=True) == f"{JOB}-attempt-1-rows-00002"
    )  # ...but on its way out
    os.killpg(proc.pid, signal.SIGKILL)  # no final upload step ran: the machine is gone
    proc.wait(timeout=30)
    # attempt 2: a fresh checkout, this shard's earlier uploads, then the same command
    second = tmp_path / "attempt-2" / "results"
    (csv_name,) = [p.name for p in (first / "gh7" / "raw").glob("*.csv")]
    lines = shard_rows.restore(artifacts, second / "gh7", JOB)
    assert lines == [
        f"raw/{csv_name}: 2 row(s) from 1 earlier upload(s)",
        f"manifest.json: from {JOB}-attempt-1-rows-00002",
    ]
    assert (second / "gh7" / "manifest.json").read_text() == manifest  # the re-run keeps the run's night
    proc = start(stub, second, {})
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "2 already recorded" in err  # the resume skipped the cells attempt 1 finished
    final = shard_rows.Uploader(second / "gh7", f"{JOB}-attempt-2", lambda n, d: None)
    download(artifacts, f"{JOB}-attempt-2", shard_rows.snapshot(second / "gh7"))  # the final upload
    assert final.tick(time.monotonic(), final=True) == f"{JOB}-attempt-2-rows-00004"
    # the merge job: every upload of every attempt, one row per cell
    run_dir = tmp_path / "merged"
    nightly.collect(artifacts, run_dir, [JOB])
    rows = read_rows(run_dir / "raw" / csv_name).rows
    kept, dropped = one_per_cell(rows, KEY_COLUMNS)
    assert len(rows) == len(kept) == 4 and dropped == []  # every cell once, none lost
    assert {r["status"] for r in rows} == {"ok"}
    pids = [r["input_source"] for r in rows]  # the stub writes the runner's pid: two attempts
    assert len(set(pids)) == 2 and pids[0] == pids[1] != pids[2] == pids[3]


def _csv(path: Path, header: str, *rows: str, torn: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(header + "".join(r + "\n" for r in rows) + torn)
    return path


def test_uploads_of_one_csv_are_joined_in_order_each_row_once(tmp_path: Path) -> None:
    arts = tmp_path / "a"
    uploads = [
        ("-attempt-1-rows-00002", ("r1", "r2")),
        ("-attempt-1", ("r1", "r2", "r3")),
        ("-attempt-2-rows-00004", ("r1", "r2", "r3", "r4")),
        ("-attempt-1-rows-00003", ("r1",)),
    ]
    for name, rows in uploads:
        _csv(arts / f"{JOB}{name}" / "raw" / "s.csv", "h\n", *rows, torn="r-torn")
    assert [p.name[len(JOB):] for p in shard_rows.uploads(arts, JOB)] == [
        "-attempt-1-rows-00002", "-attempt-1-rows-00003", "-attempt-1", "-attempt-2-rows-00004"
    ]  # fmt: skip
    run_dir = tmp_path / "run"
    _csv(run_dir / "raw" / "s.csv", "h\n", "r0")  # already here: kept, first
    shard_rows.restore(arts, run_dir, JOB)
    assert (run_dir / "raw" / "s.csv").read_text() == "h\nr0\nr1\nr2\nr3\nr4\n"  # no torn line
    _csv(arts / f"{JOB}-attempt-3" / "raw" / "s.csv", "other\n", "x")
    with pytest.raises(shard_rows.Problem, match="its columns differ"):
        shard_rows.restore(arts, tmp_path / "run2", JOB)


def _jwt(scopes: str) -> str:
    part = base64.urlsafe_b64encode(json.dumps({"scp": scopes}).encode()).decode().rstrip("=")
    return f"e30.{part}.sig"


def test_an_upload_speaks_the_artifact_service_as_upload_artifact_does() -> None:
    sent: list[tuple[str, bytes, dict[str, str], str]] = []

    def post(url: str, body: bytes, headers: dict[str, str], method: str) -> bytes:
        sent.append((url, body, headers, method))
        if url.endswith("/CreateArtifact"):
            return json.dumps({"ok": True, "signed_upload_url": "https://blob.example/c?sig=x"}).encode()
        if url.endswith("/FinalizeArtifact"):
            return json.dumps({"ok": True, "artifact_id": "42"}).encode()
        return b""

    runtime = shard_rows.Runtime(
        _jwt("Actions.Other Actions.Results:run-1:job-2"), "https://results.example/"
    )
    assert shard_rows.upload(runtime, "raw-x-attempt-1-rows-00003", b"zipbytes", post) == "42"
    create, put, finalize = sent
    assert (
        create[0]
        == "https://results.example/twirp/github.actions.results.api.v1.ArtifactService/CreateArtifact"
    )
    ids = {"workflow_run_backend_id": "run-1", "workflow_job_run_backend_id": "job-2"}
    assert json.loads(create[1]) == {**ids, "name": "raw-x-attempt-1-rows-00003", "version": 4}
    assert create[2]["Authorization"] == f"Bearer {runtime.token}"
    assert put[:2] == ("https://blob.example/c?sig=x", b"zipbytes") and put[3] == "PUT"
    assert put[2]["x-ms-blob-type"] == "BlockBlob" and "Authorization" not in put[2]
    done = json.loads(finalize[1])
    assert done["size"] == "8" and done["hash"].startswith("sha256:") and done["name"].endswith("00003")
    with pytest.raises(shard_rows.Problem, match=r"no Actions\.Results scope"):
        shard_rows.Runtime(_jwt("Actions.Other"), "https://r/").backend_ids()


def test_a_failed_upload_is_a_warning_and_the_next_tick_tries_again(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _csv(run_dir / "raw" / "s.csv", "h\n", "r1", "r2", "r3")
    calls: list[str] = []
    stop = tmp_path / "stop"

    def send(name: str, data: bytes) -> None:
        calls.append(name)
        if len(calls) == 1:
            stop.touch()  # the benchmark ends while the first upload fails
            raise shard_rows.Problem("HTTP 503")

    said: list[str] = []
    shard_rows.watch(shard_rows.Uploader(run_dir, "p", send), stop, poll_s=0, log=said.append)
    assert said == ["::warning::rows not uploaded this time: HTTP 503", "uploaded p-rows-00003"]
    assert calls == ["p-rows-00003", "p-rows-00003"]
    uploader = shard_rows.Uploader(run_dir, "p", lambda n, d: calls.append(n))
    assert uploader.tick(0.0) == "p-rows-00003" and uploader.tick(1.0) is None  # nothing new
    _csv(run_dir / "superseded" / "s.csv", "h\n", "old")
    assert uploader.tick(2.0) is None and uploader.tick(700.0) == "p-rows-00004"  # one new row, 10 min


def test_space_where_docker_keeps_images_is_checked(tmp_path: Path) -> None:
    def docker(cmd: list[str]) -> str:
        assert cmd == ["docker", "info", "--format", "{{.DockerRootDir}}"]
        return str(tmp_path / "docker") + "\n"

    (tmp_path / "docker").mkdir()
    said = nightly.check_space(docker, tmp_path / "results", 40, free=lambda p: 120.0)
    docker_dir, results = tmp_path / "docker", tmp_path / "results"
    assert said == f"Docker's storage ({docker_dir}): 120.0 GB free; the results ({results}): 120.0 GB free"
    with pytest.raises(
        nightly.Invalid, match=r"only 12\.5 GB free on the disk of Docker's storage .*BENCH_MIN_FREE_GB=40"
    ):
        nightly.check_space(docker, tmp_path, 40, free=lambda p: 12.5)
    assert "unknown" in nightly.check_space(lambda c: "", tmp_path, 40, free=lambda p: 99.0)
