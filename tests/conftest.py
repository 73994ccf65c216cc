"""What the test files share: the one smoke run of a test session, the Hypothesis profiles, and
how the slow tests are grouped under pytest-xdist.

The smoke run (`suite run --profile smoke`: in CI every architecture eager and four of them
compiled, ResNet in reduce-overhead too, 17 cells; SUITE_SMOKE_E2E=full: smoke-compiled's 25, see
tests/support/__init__.py) is
the costliest thing the tests do, so it runs once per session whoever asks for it:
tests/e2e/test_smoke_e2e.py checks its rows and merges it. Under pytest-xdist (`nox -s tests`: `-n 3
--dist loadgroup`) every test that uses it is put in one xdist_group, so one worker runs them
all while the others run the rest; a file lock makes the run happen once even where the groups
are not honoured (another --dist; pytest 9.2, see noxfile.py), at the cost of a worker waiting
for it.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from support import SmokeRun, smoke_passes, suite_cli, write_stub_worker

# Hypothesis: `ci` (the default: a quarter of the examples each test asks for, see
# support.examples), `thorough` (ten times as many), or Hypothesis' own `default`; pick one with
# HYPOTHESIS_PROFILE=thorough. `nox -s tests-stable` installs pytest alone, hence the guard.
try:
    from hypothesis import settings
except ImportError:
    pass
else:
    settings.register_profile("ci", max_examples=25, deadline=None, print_blob=True)
    settings.register_profile("thorough", max_examples=1000, deadline=None, print_blob=True)
    settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Under pytest-xdist the workers share the cores: each gets its share as torch's thread count,
# in its own process and in the suite runs it starts (they inherit the environment). More
# OpenMP threads than cores wait for each other's time slices: on this 2-core machine under a
# load of 7, a compiled ViT smoke call took 380 ms with 2 threads and 0.57 ms with 1.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    share = (os.cpu_count() or 1) // int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, share)))

# Inductor on a CPU first checks which vector instructions the compiler can build, by compiling
# and loading a test library per instruction set, once per cache folder: every cold compile of the
# tests (a fresh cache each) paid it again. On this 2-core VM it was 12 s of the 25 to 31 s a
# compiled tiny ViT took (15 s without it). Trusting the CPU's flags picks the same instruction
# set, hence the same kernels. The tests only: a user's cold compile_s includes the check, as a
# fresh cache does.
os.environ.setdefault("TORCHINDUCTOR_VEC_ISA_OK", "1")


def pytest_configure(config: pytest.Config) -> None:
    """suite/ byte-compiled once, before any test, and the test session's own cache folder: the
    tests start hundreds of child Pythons (`suite run`, its probe and workers), and where
    PYTHONDONTWRITEBYTECODE=1 (CI's machines) each would compile every suite module it imports
    anew (0.3 to 0.6 s of CPU a child on 2 cores). Python only reads the .pyc files that
    variable keeps it from writing."""
    if not hasattr(config, "workerinput"):  # once, in the controller, before xdist's workers
        import compileall
        import tempfile

        compileall.compile_dir(Path(__file__).resolve().parents[1] / "suite", quiet=1)
        # the model checks `plan` remembers (suite.run.checkcache): the test session's own, shared
        # by its workers and the suites they start (they inherit the variable), never the user's
        os.environ["SUITE_CACHE_DIR"] = tempfile.mkdtemp(prefix="suite-test-cache-")


# Fixtures that run something costly once per session -> the xdist group of their tests.
SHARED = {"smoke_run": "smoke", "custom_run": "custom"}


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the node ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, group in SHARED.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(group))
                item.add_marker(pytest.mark.slow)


def once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """The folder `make` fills, made once per test session: the first xdist worker to ask takes
    a lock and makes it; the others wait for it, then reuse it (or are told it failed)."""
    base = tmp_path_factory.getbasetemp()
    # under xdist each worker's basetemp is a folder of the session's own
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "once"
    root.mkdir(exist_ok=True)
    folder, done, failed = root / name, root / f"{name}.done", root / f"{name}.failed"
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if failed.exists():
            pytest.fail(f"the shared {name} run failed (in another worker): {failed.read_text()}")
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                make(folder)
            except Exception as exc:
                failed.write_text(str(exc)[-3000:])
                raise
            done.touch()
    return folder


@pytest.fixture(scope="session")
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> SmokeRun:
    run_id = "e2e"

    def make(out: Path) -> None:
        # the default schedule (`ahead`) as a user runs it: each compiled cell's process compiles
        # on cold caches in a wave, then times alone, its model's eager cell after it; two
        # compiles at once on any machine (its compile_s are no figures anyone compares), so the
        # waves run wider than one. The compile-cost processes are tests/e2e/test_compile_cost_e2e.py's.
        base = ("run", "--profile", "smoke", "--device", "cpu", "--out", str(out), "--run-id", run_id)
        base += ("--no-compile-cost", "--compile-pool", "2")
        printed = []
        for extra in smoke_passes():
            proc = suite_cli(*base, *extra)
            printed.append(proc.stderr)
            assert proc.returncode == 0, proc.stderr[-3000:]
        (out / "stderr.txt").write_text("".join(printed))

    out = once(tmp_path_factory, "smoke", make)
    return SmokeRun(out, run_id, (out / "stderr.txt").read_text())


@pytest.fixture(scope="session")
def custom_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ViT-6-layers (a custom configuration of matrix.yaml) under the custom-smoke profile: eager
    inference and a training step, one compiled inference cell. Its base, ViT, is the smoke run's
    (tests/e2e/test_custom_e2e.py merges the two): measured once, not again here."""
    common = ("run", "--profile", "custom-smoke", "--device", "cpu", "--run-id", "custom")
    # the compiled cell first, with its eager sibling (one process under `ahead`), then the
    # training step
    passes = (
        ("--models", "ViT-6-layers", "--modes", "eager,default", "--scenarios", "inference"),
        ("--models", "ViT-6-layers", "--modes", "eager", "--scenarios", "train", "--keep-failed"),
    )

    def make(out: Path) -> None:
        for extra in passes:
            proc = suite_cli(*common, "--out", str(out), *extra)
            assert proc.returncode == 0, proc.stderr[-3000:]

    return once(tmp_path_factory, "custom", make) / "custom"


@pytest.fixture
def stub(tmp_path: Path) -> Path:
    """support.runner's stub worker (it answers at once) at tmp_path/worker.sh; a test file with a
    stub of its own overrides this fixture."""
    from support.runner import STUB

    return write_stub_worker(tmp_path / "worker.sh", STUB)
