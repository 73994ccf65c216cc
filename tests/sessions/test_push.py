"""Results leave the machine (suite.sessions.push): a run folder pushed to a local folder twice
gives the same files with the same content; a URL whose package is missing is one line before
anything runs; and a container session killed on the way is resumed by the next one without
`--run-id`, every cell once.

The sessions run in this process against the fake docker and nvidia-smi (tests/support/docker.py);
their containers are replaced by the real runner with the stub worker (tests/support), so the
rows are real rows written by the runner's own resume, in a fraction of a second per cell.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import NoReturn

import pytest
from support import STUB_ENVIRONMENT, write_stub_worker
from support.docker import ROOT, make_fake

from suite.errors import UsageError
from suite.results import key_of, read_rows
from suite.run import runner as run_runner
from suite.sessions import containers, pergpu, posargs, push
from suite.sessions.runner import Runner
from suite.spec import Filters, expand, load_matrix
from suite.spec.shard import Shard, select

MATRIX = load_matrix(ROOT / "matrix.yaml")


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def a_run(tmp_path: Path) -> Path:
    run = tmp_path / "results" / "r1"
    (run / "raw").mkdir(parents=True)
    (run / "raw" / "stable__cpu.csv").write_text("run_id,model\nr1,ViT\n")
    (run / "raw" / "stable__cpu.samples.jsonl").write_text('{"row": 1}\n')
    (run / "tables").mkdir()
    (run / "tables" / "tables.md").write_text("# tables\n")
    (run / "raw" / ".stable__cpu.csv.lock").write_text("")  # hidden: never pushed
    (run / ".compile-cache").mkdir()
    (run / ".compile-cache" / "blob").write_text("x")
    return run


def test_a_local_push_twice_gives_the_same_files(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    target = push.open_target(str(tmp_path / "bucket"))
    assert push.push(run, target) == 3
    first = tree(tmp_path / "bucket")
    assert first == {
        "r1/raw/stable__cpu.csv": b"run_id,model\nr1,ViT\n",
        "r1/raw/stable__cpu.samples.jsonl": b'{"row": 1}\n',
        "r1/tables/tables.md": b"# tables\n",
    }
    assert push.push(run, target) == 0 and tree(tmp_path / "bucket") == first  # nothing twice
    with (run / "raw" / "stable__cpu.csv").open("a") as fh:
        fh.write("r1,ResNet\n")
    assert push.push(run, target) == 1  # the grown CSV alone, replaced whole
    assert tree(tmp_path / "bucket")["r1/raw/stable__cpu.csv"].endswith(b"r1,ResNet\n")
    (tmp_path / "bucket" / "r1" / "tables" / "tables.md").unlink()  # gone from the target: sent again
    assert push.push(run, target) == 1 and len(tree(tmp_path / "bucket")) == 3


def test_the_watcher_pushes_every_n_rows_and_at_the_end(tmp_path: Path) -> None:
    run = a_run(tmp_path)
    said: list[str] = []
    watcher = push.Watcher(run, push.open_target(str(tmp_path / "b"), every=2), said.append)
    watcher.once()
    assert not (tmp_path / "b" / "r1").exists()  # 1 row: fewer than 2
    with (run / "raw" / "stable__cpu.csv").open("a") as fh:
        fh.write("r1,ResNet\n")
    watcher.once()
    assert said == ["pushed r1 to " + str(tmp_path / "b") + ": 3 file(s) new or changed, 2 row(s)"]
    (run / "tables" / "more.md").write_text("x\n")
    watcher.stop()  # the last push carries whatever is new
    assert (tmp_path / "b" / "r1" / "tables" / "more.md").is_file()


def test_push_from_the_variable_and_urls_without_their_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = push.target_of(None, None, {"SUITE_PUSH": str(tmp_path / "v"), "SUITE_PUSH_EVERY": "7"})
    assert target is not None and (target.url, target.every, target.fs) == (str(tmp_path / "v"), 7, None)
    assert push.target_of(None, None, {}) is None
    with pytest.raises(UsageError, match=r"^--push-every: 'x'"):
        push.target_of(str(tmp_path), "x", {})
    monkeypatch.setitem(sys.modules, "fsspec", None)  # `import fsspec` fails as if absent
    for url in ("s3://bucket/runs", "hf://datasets/org/runs"):
        with pytest.raises(UsageError) as caught:
            push.open_target(url)
        line = str(caught.value)
        assert line.startswith(f"--push: {url}: fsspec is not installed") and "\n" not in line
    monkeypatch.undo()
    pytest.importorskip("fsspec")
    if importlib.util.find_spec("s3fs") is None:  # fsspec there, its S3 filesystem not
        with pytest.raises(
            UsageError, match=r"^--push: s3://b/r: s3fs is not installed .* pip install fsspec s3fs"
        ):
            push.open_target("s3://b/r")


def test_a_url_push_goes_through_fsspec_once_per_change(tmp_path: Path) -> None:
    """memory:// stands in for s3:// and hf:// (the same fsspec calls, no network)."""
    pytest.importorskip("fsspec")
    run = a_run(tmp_path)
    target = push.open_target("memory://h37b-test/runs")
    assert push.push(run, target) == 3 and push.push(run, target) == 0
    fs = target.fs
    assert sorted(fs.find("memory://h37b-test/runs")) == [
        "/h37b-test/runs/r1/raw/stable__cpu.csv",
        "/h37b-test/runs/r1/raw/stable__cpu.samples.jsonl",
        "/h37b-test/runs/r1/tables/tables.md",
    ]
    assert fs.cat_file("memory://h37b-test/runs/r1/tables/tables.md") == b"# tables\n"
    fs.rm("memory://h37b-test", recursive=True)


def test_the_merge_after_a_pushed_run_pushes_its_tables_too() -> None:
    from support.docker import load_noxfile

    noxfile = load_noxfile()
    asked = []
    session = SimpleNamespace(posargs=[], notify=lambda name, posargs: asked.append((name, posargs)))
    noxfile.merge_after(session, "results/r", "s3://bucket/runs")
    noxfile.merge_after(session, "results/r")
    assert asked == [("merge", ["results/r", "--push", "s3://bucket/runs"]), ("merge", ["results/r"])]


# --- a killed session, resumed without --run-id -----------------------------------------------


class Killed(BaseException):
    """What a preempted VM does to the session (as KeyboardInterrupt: nothing catches it)."""


def _error(message: str) -> NoReturn:
    raise RuntimeError(message)


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    made = make_fake(tmp_path)
    for key in [k for k in os.environ if k.startswith(("FAKE_", "SUITE_GPU", "SUITE_PUSH"))]:
        monkeypatch.delenv(key)
    for key, value in made.env.items():
        monkeypatch.setenv(key, value)
    # the stub worker's sleep and mv, after the fakes (which answer first)
    monkeypatch.setenv("PATH", made.env["PATH"] + os.pathsep + "/usr/bin:/bin")
    made.lines = []
    made.cmds = []
    made.runner = Runner(run=lambda *a, **k: None, log=made.lines.append, error=_error)
    made.stub = str(write_stub_worker(tmp_path / "stub-worker"))
    return made


def containers_as_stub_runs(fake: SimpleNamespace, monkeypatch: pytest.MonkeyPatch, stop_after: int) -> None:
    """Each container's `suite run` done by the real runner with the stub worker, on the cells
    its command line selects; after `stop_after` cells the session is killed."""

    def run(self: pergpu.Pipelines, jobs: list[pergpu.Job]) -> list[pergpu.Outcome]:
        done = []
        for job in jobs:
            cmd = job.cmd
            fake.cmds.append(cmd)
            run_id = cmd[cmd.index("--run-id") + 1]
            cells = expand(MATRIX, "smoke", job.build.name, Filters(models=("ViT", "ResNet")))
            if "--shard" in cmd:
                cells = select(cells, Shard.parse(cmd[cmd.index("--shard") + 1]))
            sweep = run_runner.Sweep(
                cells[:stop_after], STUB_ENVIRONMENT, fake.out, run_id, python=fake.stub, min_free_mb=0
            )
            run_runner.run_cells(sweep)
            if stop_after < len(cells):
                raise Killed
            done.append(pergpu.Outcome(job, 0, 0.0))
        return done

    monkeypatch.setattr(pergpu.Pipelines, "run", run)


def session(fake: SimpleNamespace, *args: str) -> containers.Bench:
    smoke = ["--profile", "smoke", "--models", "ViT,ResNet", "--no-merge"]
    return containers.bench_containers(
        fake.runner, ["--out", str(fake.out), *smoke, *args], ROOT, "stable", lambda *a: None
    )


def test_a_killed_session_is_resumed_without_run_id_every_cell_once(
    fake: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    cells = expand(MATRIX, "smoke", "stable", Filters(models=("ViT", "ResNet")))
    assert len(cells) >= 3
    bucket = fake.tmp / "bucket"
    containers_as_stub_runs(fake, monkeypatch, stop_after=2)
    with pytest.raises(Killed):
        session(fake, "--push", str(bucket))
    (first,) = [p.name for p in fake.out.iterdir()]
    assert len(read_rows(fake.out / first / "raw" / "stable__cpu.csv").rows) == 2
    # pushed on the way out (a SIGKILL leaves the push of every N rows before it)
    assert len(read_rows(bucket / first / "raw" / "stable__cpu.csv").rows) == 2

    containers_as_stub_runs(fake, monkeypatch, stop_after=len(cells))
    session(fake, "--push", str(bucket))
    assert [p.name for p in fake.out.iterdir()] == [first]  # no second run folder
    assert any(line.startswith(f"resuming {first}: the newest run in") for line in fake.lines)
    assert {c[c.index("--run-id") + 1] for c in fake.cmds} == {first}
    got = read_rows(fake.out / first / "raw" / "stable__cpu.csv").rows
    assert sorted(key_of(r) for r in got) == sorted({key_of(r) for r in got})  # every cell once
    assert len(got) == len(cells) and not (fake.out / first / "superseded").exists()
    assert tree(bucket / first) == {
        k: v for k, v in tree(fake.out / first).items() if not any(p.startswith(".") for p in k.split("/"))
    }

    # finished: nothing left to resume, the next session without --run-id starts a new run
    assert push.unfinished(fake.out, "stable") is None


def test_new_starts_another_run_beside_an_unfinished_one(fake: SimpleNamespace) -> None:
    push.mark(fake.out / "stable-old", "stable", "running")
    push.mark(fake.out / "nightly-old", "nightly", "running")  # another session's: not this one's
    assert push.unfinished(fake.out, "stable") == "stable-old"
    bench = containers.resumed(
        fake.runner, posargs.bench_args(["--out", str(fake.out)], "stable", ROOT), False
    )
    assert bench.run_id == "stable-old" and fake.lines[-1].startswith("resuming stable-old: ")
    fresh = containers.resumed(
        fake.runner, posargs.bench_args(["--out", str(fake.out)], "stable", ROOT), True
    )
    assert fresh.run_id.startswith("stable-2") and fresh.run_id != "stable-old"
    given = posargs.bench_args(["--out", str(fake.out), "--run-id", "mine"], "stable", ROOT)
    assert containers.resumed(fake.runner, given, False).run_id == "mine"
