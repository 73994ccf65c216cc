"""The README's host (a Python with nox and PyYAML, no torch, no pandas): every verb either
works or says in one line what it needs (exit 2), a closed stdout ends a verb quietly, the
nox sessions exit with the suite's own statuses, and bench-local runs the builds it can.

The host here is a real virtualenv made by the test, with PyYAML copied in and nothing else
(no pip, no network).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv as stdlib_venv
from pathlib import Path
from typing import NoReturn

import pytest
import yaml
from support import REPO, TINY
from support.docker import make_fake, nox, one_error_line

from suite.errors import UsageError
from suite.sessions import posargs, venv
from suite.sessions import runner as session
from suite.sessions.runner import Runner

CLOSED_OUTPUT = 141  # 128 + SIGPIPE, as the README says (suite.cli.CLOSED_OUTPUT)
SMOKE_RUN = REPO / "results" / "2026-11-21-cpu-amd-epyc-smoke"


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a fresh virtualenv holding PyYAML alone."""
    root = tmp_path_factory.mktemp("host")
    stdlib_venv.create(root / "venv", with_pip=False)
    python = root / "venv" / "bin" / "python"
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()
    )  # fmt: skip
    shutil.copytree(Path(yaml.__file__).parent, site / "yaml")
    probe = "import importlib.util as u; print([m for m in ('torch', 'pandas', 'matplotlib', 'yaml') "
    probe += "if u.find_spec(m)])"
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert found.strip() == "['yaml']", found  # the host the README sets up, no more
    return python


def suite(python: Path, *args: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [str(python), "-m", "suite", *args], cwd=REPO, env=env, capture_output=True, text=True,
        timeout=300, check=False, **kwargs,
    )  # fmt: skip


def one_line(proc: subprocess.CompletedProcess[str], verb: str) -> str:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"suite {verb}: error: "), proc.stderr
    return lines[0]


def test_env_without_torch_says_which_python_to_use(host: Path) -> None:
    line = one_line(suite(host, "env"), "env")
    assert "torch: not installed in this Python" in line and str(host) in line
    assert ".nox/build-current/bin/python -m suite env" in line and "pip install torch" in line


def test_run_without_torch_is_one_line(host: Path, tmp_path: Path) -> None:
    line = one_line(
        suite(host, "run", "--matrix", str(TINY), "--profile", "tiny", "--out", str(tmp_path)), "run"
    )
    assert "torch: not installed" in line


@pytest.mark.parametrize(
    ("verb", "args", "hint"),
    [
        ("merge", [str(SMOKE_RUN), "-o", "{tmp}"], "`nox -s merge -- RUN_DIR`"),
        ("compare", [str(SMOKE_RUN), str(SMOKE_RUN)], ".nox/merge/bin/python -m suite compare"),
    ],
)
def test_merge_and_compare_without_pandas_say_what_to_install(
    host: Path, tmp_path: Path, verb: str, args: list[str], hint: str
) -> None:
    line = one_line(suite(host, verb, *[a.format(tmp=tmp_path) for a in args]), verb)
    assert "pandas: not installed in this Python" in line and hint in line
    assert "pip install -e '.[host]'" in line
    assert not (tmp_path / "tables").exists()


def test_merge_without_pyarrow_says_so_before_writing_anything(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The merge writes the samples as Parquet: a virtualenv with pandas and matplotlib but no
    pyarrow (an earlier `nox -s merge`'s, before it installed pyarrow) gets one line, not
    pandas' traceback from the middle of the merge (seen in `nox -s bench-local`, 2026-11-25)."""
    from suite.cli import main

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` fails as if absent
    assert main(["merge", str(SMOKE_RUN), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "pyarrow: not installed in this Python" in err
    assert "pip install -e '.[host]'` (pandas, matplotlib, pyarrow)" in err
    assert not (tmp_path / "out").exists()


def test_history_html_without_pandas_says_what_to_install(host: Path, tmp_path: Path) -> None:
    line = one_line(suite(host, "history", "html", str(tmp_path / "h")), "history")
    assert (
        "pandas: not installed in this Python" in line
        and ".nox/merge/bin/python -m suite history html" in line
    )
    assert not (tmp_path / "h").exists()


def test_calibrate_without_pandas_says_what_to_install(host: Path) -> None:
    line = one_line(suite(host, "calibrate", "--aa", str(SMOKE_RUN), str(SMOKE_RUN)), "calibrate")
    assert "pandas: not installed in this Python" in line and "pip install -e '.[host]'" in line


@pytest.mark.parametrize("verb", ["repeat", "crosscheck"])
def test_repeat_and_crosscheck_without_torch_are_one_line(host: Path, tmp_path: Path, verb: str) -> None:
    args = ["--matrix", str(TINY), "--profile", "tiny", "--out", str(tmp_path)]
    assert "torch: not installed" in one_line(suite(host, verb, *args), verb)


def test_plan_works_on_the_host(host: Path) -> None:
    proc = suite(host, "plan", "--profile", "smoke")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "17 cell(s)" in proc.stdout  # every architecture eager, one of each task compiled


def test_a_closed_stdout_ends_a_verb_quietly(host: Path) -> None:
    """`suite plan | head`: the reader goes away; the verb stops, with no traceback."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.Popen(
        [str(host), "-m", "suite", "plan", "--profile", "full"],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the first line: every write of the verb meets a closed pipe
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == CLOSED_OUTPUT, err
    assert err == ""


# --- through nox ----------------------------------------------------------------------------


def test_nox_merge_of_a_missing_folder_exits_2(tmp_path: Path) -> None:
    """The README's exit status through nox (nox alone would say 1), before anything is installed."""
    fake = make_fake(tmp_path)
    proc = nox(
        fake, "--envdir", str(tmp_path / "envs"), "-s", "merge", "--", str(tmp_path / "missing-folder")
    )
    assert proc.returncode == 2, proc.stderr
    assert one_error_line(proc).endswith("missing-folder: no such run folder or CSV file")
    assert "pip install" not in proc.stderr


def test_merge_args_check_the_folders_and_default_to_the_newest_run(tmp_path: Path) -> None:
    results = tmp_path / "results"
    with pytest.raises(UsageError, match="no run folder with raw CSVs"):
        posargs.merge_args([], results)
    for name in ("old", "new"):
        (results / name / "raw").mkdir(parents=True)
        (results / name / "raw" / "a__cpu.csv").write_text("x\n")
    os.utime(results / "old" / "raw" / "a__cpu.csv", (1, 1))
    assert posargs.merge_args(["--offline"], results) == ([str(results / "new")], True)
    assert posargs.merge_args(["-o", "x", str(results / "old")], results) == (
        ["-o", "x", str(results / "old")],
        False,
    )
    assert posargs.merge_args(["-o", str(tmp_path / "out")], results)[0] == [
        str(results / "new"),
        "-o",
        str(tmp_path / "out"),
    ]
    with pytest.raises(UsageError, match="gone: no such run folder"):
        posargs.merge_args(["gone"], results)


@pytest.mark.parametrize("code", [2, 3, 130, 141])
def test_a_session_exits_with_the_suite_s_own_status(code: int) -> None:
    def error(message: str) -> NoReturn:
        raise AssertionError(message)

    runner = Runner(run=lambda *a, **k: None, log=lambda m: None, error=error)
    with pytest.raises(SystemExit) as info:
        session.run_suite(runner, [sys.executable, "-c", f"raise SystemExit({code})"])
    assert info.value.code == code


# --- bench-local without one of the builds' Pythons -------------------------------------------


def test_bench_local_runs_the_builds_it_has_a_python_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logged: list[str] = []
    ran: list[list[str]] = []

    def error(message: str) -> NoReturn:
        raise AssertionError(message)

    runner = Runner(run=lambda *a, **k: None, log=logged.append, error=error)
    monkeypatch.setattr(venv, "find_python", lambda version: None if version == "3.10" else f"/py/{version}")
    monkeypatch.setattr(venv, "ready_venv", lambda build, root: None)
    monkeypatch.setattr(venv, "build_venv", lambda runner, build, root: Path(f"/venvs/{build.name}/python"))
    monkeypatch.setattr(venv, "run_suite", lambda runner, cmd, env=None: ran.append(cmd))
    out = ["--out", str(tmp_path)]
    target = venv.bench_local(runner, [*out, "--run-id", "r"], REPO, lambda build, bench: None)
    assert [cmd[0] for cmd in ran] == ["/venvs/current/python"]  # the other build ran
    assert target == str(tmp_path / "r")
    (skipped,) = [m for m in logged if m.startswith("skipped: ")]
    assert "build stable needs Python 3.10 (matrix.yaml: builds.stable.python)" in skipped
    assert "no python3.10" in skipped and "pyenv install 3.10" in skipped
    ran.clear()
    with pytest.raises(UsageError, match=r"bench-local: build stable needs Python 3\.10"):
        venv.bench_local(runner, [*out, "--build", "stable"], REPO, lambda build, bench: None)
    assert ran == []


def test_a_bare_import_error_naming_a_needed_package_is_one_line() -> None:
    """pandas without pyarrow raises ImportError, not ModuleNotFoundError, with the package in
    its message: `needs` reads it as that package missing; an ImportError about something else
    stays an error (a bug is not a missing package)."""
    from suite.cli.needs import REPORT, needs

    finish = needs("gpu-study finish", REPORT, "hint")
    with pytest.raises(UsageError, match=r"pyarrow: not installed .* `suite gpu-study finish` needs"), finish:
        raise ImportError("Unable to find a usable engine; tried using: 'pyarrow', 'fastparquet'.")
    with pytest.raises(UsageError, match=r"^pyarrow: "), needs("merge", REPORT, "hint"):
        raise ImportError("Missing optional dependency 'pyarrow'.  Use pip or conda to install pyarrow.")
    with pytest.raises(ImportError, match="cannot import name"), needs("merge", REPORT, "hint"):
        raise ImportError("cannot import name 'frobnicate' from 'suite.report'")
    with pytest.raises(ModuleNotFoundError), needs("merge", REPORT, "hint"):
        raise ModuleNotFoundError("No module named 'yaml'", name="yaml")


def test_bench_local_pairs_its_two_builds_unless_told_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stable build (base) and the current one (new) timed side by side under one coordinator,
    whose socket is in the run folder; `--separate` runs them one after the other."""
    logged: list[str] = []
    ran: list[list[str]] = []
    paired: list[tuple[object, list[object]]] = []

    def error(message: str) -> NoReturn:
        raise AssertionError(message)

    runner = Runner(run=lambda *a, **k: None, log=logged.append, error=error)
    monkeypatch.setattr(venv, "find_python", lambda version: f"/py/{version}")
    monkeypatch.setattr(venv, "build_venv", lambda runner, build, root: Path(f"/venvs/{build.name}/python"))
    monkeypatch.setattr(venv, "run_suite", lambda runner, cmd, env=None: ran.append(cmd))
    monkeypatch.setattr(
        venv, "run_pair", lambda c, sides: paired.append((c, list(sides))) or {"base": 0, "new": 0}
    )
    out = ["--out", str(tmp_path), "--run-id", "r"]
    venv.bench_local(runner, [*out, "--models", "ViT"], REPO, lambda build, bench: None)
    assert ran == []
    ((coordinator, sides),) = paired
    assert coordinator.path == tmp_path / "r" / ".pair.sock"
    assert [(s.role, s.command[0]) for s in sides] == [
        ("base", "/venvs/stable/python"),
        ("new", "/venvs/current/python"),
    ]
    for side in sides:
        cmd = list(side.command)
        assert cmd[cmd.index("--pair") + 1] == str(coordinator.path)
        assert cmd[cmd.index("--pair-role") + 1] == side.role and cmd[-2:] == ["--schedule", "serial"]
        assert "--models" in cmd and "--separate" not in cmd
    venv.bench_local(runner, [*out, "--separate"], REPO, lambda build, bench: None)
    assert [cmd[0] for cmd in ran] == ["/venvs/stable/python", "/venvs/current/python"]
    assert all("--pair" not in cmd for cmd in ran)
    assert any("builds timed apart: --separate" in line for line in logged)
