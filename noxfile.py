# /// script
# dependencies = ["nox>=2025.2.9", "pyyaml"]
# ///
"""Entry points: `nox -s bench-local` (the main job), `nox -s tests`, `nox -s lint`, ...

This file declares the sessions; what they do is suite.sessions (`venv`: the local builds'
virtualenvs; `containers`: the images and their runs; `requirements`: the lock files;
`runner`: the flags and the one-line errors), which takes
each session's run/log/error as a `Runner`. Builds (torch version, Python, pins) come from
matrix.yaml, the one place they are declared; nox reads it with PyYAML, which the block
above asks for. Importing this file starts no process.
"""

import contextlib
import io
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the suite of this checkout (stdlib + PyYAML on this side)

from suite.sessions import containers_e2e as e2e  # noqa: E402  (its session is containers_e2e)
from suite.sessions import imagebuild, requirements, trust, venv  # noqa: E402
from suite.sessions import noxglue as glue  # noqa: E402
from suite.sessions.noxglue import merge_after, runner  # noqa: E402
from suite.sessions.posargs import BenchArgs  # noqa: E402
from suite.sessions.runner import one_line_errors, redact_nox_output  # noqa: E402
from suite.sessions.toolpins import LINT_TOOLS, MERGE_PACKAGES, TEST_EXTRAS  # noqa: E402
from suite.spec import BuildSpec  # noqa: E402

redact_nox_output()  # every line nox prints (commands, session.log, errors) is redacted
nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True
TEST_PYTHON, MERGE_PYTHON = venv.session_pythons()  # found without running a Python


def suite_session(**kwargs: object) -> Callable[[Callable[[nox.Session], None]], object]:
    """nox.session, with bad input one line and exit status 2 (suite.sessions.runner.one_line_errors)."""
    return lambda body: nox.session(**kwargs)(one_line_errors(body))  # type: ignore[call-overload]


def suite_verb(args: Sequence[str]) -> str:
    """`python -m suite ARGS` in this process (the host's suite, no torch: `suite mark`, `plan`);
    its standard output. Its one-line error (and only then its warnings) ends the session."""
    from suite.cli import main as suite_main

    out, said = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(said):
        code = suite_main(list(args))
    if code != 0:
        sys.stderr.write(said.getvalue())
        raise SystemExit(code)
    return out.getvalue()


def check_selection(build: BuildSpec, bench: BenchArgs) -> None:
    """Bad flags are reported (one line, exit 2) before any environment or image is made:
    `suite plan` takes the same selection flags as `suite run`."""
    device = ["--device", bench.device] if bench.device else []
    suite_verb(["plan", "--build", build.name, "--run-id", bench.run_id, *bench.suite_args, *device])


@suite_session(name="bench-local", python=False)
def bench_local(session: nox.Session) -> None:
    """The main job without Docker: each local build (matrix.yaml `local: true`) in a
    virtualenv pinned like its image, on whatever device this machine has (smoke profile
    on CPU, full on a GPU), then merge into tables (stable vs the others included).

    `nox -s bench-local -- --build stable --models ViT --modes eager,default` narrows it;
    `--offline` uses only cached weights; other arguments go to `python -m suite run`."""
    merge_after(session, venv.bench_local(runner(session), session.posargs, ROOT, check_selection))


@suite_session(python=False)
def build(session: nox.Session) -> None:
    """Build the images of every build that has a container (or `-- --build B1,B2`);
    `--rebuild` builds even when the image is there; `--local-bases` and `--torch-from-pypi`
    substitute what Docker Hub or the CUDA index would give (docs/containers.md); a build that
    follows the nightly gets tonight's (`--nightly-date YYYYMMDD`: that night's); `--keep N`
    then removes all but the N newest images of each build built."""
    imagebuild.build_images(runner(session), session.posargs, ROOT)


@suite_session(name="bench-stable", python=False)
def bench_stable(session: nox.Session) -> None:
    """The stable build's container on this machine's GPU (one per GPU, SUITE_GPUS choosing),
    after checking the build against the driver and GPU, then merge.

    `nox -s bench-stable -- [--device cuda|cpu] [--containers N (cpu)] [--profile P] [--models ...]
    [--run-id ID | --new] [--offline] [--local-bases] [--torch-from-pypi] [--push URL]
    [--push-every N] [--allow-busy-gpu] [--allow-mig]`: without --run-id, the newest run this
    session began and never finished is resumed; --push (or SUITE_PUSH) copies the run to a
    folder, s3:// or hf:// every N rows and at the end (docs/containers.md)."""
    glue.bench_containers(session, ROOT, "stable", check_selection, suite_verb)


@suite_session(name="bench-nightly", python=False)
def bench_nightly(session: nox.Session) -> None:
    """Tonight's torch nightly (`nightly-current`, resolved once for the session) and the
    current release it is compared with (whatever `release` cells this run lacks; the guide's
    `--build nightly` runs with `stable` instead) on this machine's GPU (one container per GPU,
    SUITE_GPUS choosing), each build checked against the driver and GPU before it is built.

    `nox -s bench-nightly -- [--build nightly,nightly-current] [--nightly-date YYYYMMDD] [--shard i/n]
    [--run-id ID] [--device cuda|cpu] [--containers N (cpu)] [--profile P] [--offline] [--no-merge]
    [--local-bases] [--torch-from-pypi] [--new] [--push URL] [--push-every N] [--allow-busy-gpu]
    [--allow-mig]`, as bench-stable; other arguments go to `python -m suite run`."""
    glue.bench_containers(session, ROOT, "nightly", check_selection, suite_verb)


@suite_session(name="containers-e2e", python=False)
def containers_e2e(session: nox.Session) -> None:
    """The container path for real, on this machine's Docker engine and CPU: build the stable
    and nightly images (substitutes only for what cannot be reached), run bench-stable,
    bench-nightly and an offline bench-stable in them, check the rows, their owner, the
    `image` column and the HF cache mount, print the figures. Minutes with cached images;
    not in CI. `nox -s containers-e2e [-- --models ViT --modes eager,default --no-cache]`."""
    e2e.containers_e2e(runner(session), session.posargs, ROOT, check_selection)


@suite_session(python=TEST_PYTHON)
def tests(session: nox.Session) -> None:
    """Unit tests and the CPU end-to-end smoke test (no GPU, no Docker; PyPI on the first run, to make
    its environment, and no network after that)."""
    glue.tests(session, ROOT, TEST_EXTRAS)


@suite_session(name="tests-stable", python=False)
def tests_stable(session: nox.Session) -> None:
    """The measuring core's tests in the stable build's own environment (torch 2.0.1 +
    transformers 4.31 on Python 3.10, the virtualenv `bench-local` uses): the smoke profile end to end, the
    offline models, fault isolation. Not part of `nox -s tests` (CI): its torch is a 4.5 GB download and its
    smoke run takes about ten minutes on 2 cores. `nox -s tests-stable [-- PYTEST ARGS]`."""
    glue.tests_stable(session, ROOT)


@nox.session(python=TEST_PYTHON)
def lint(session: nox.Session) -> None:
    """ruff (code style and errors), import-linter (the layers of docs/design.md), hadolint
    (Dockerfiles), actionlint (workflows)."""
    glue.lint(session, ROOT, LINT_TOOLS)


# The suite's benchmarks of its own figures (not in `tests`; suite/sessions/trust.py): full-size models.
@suite_session(python=False)
def crosscheck(session: nox.Session) -> None:
    """The timing loop against torch.utils.benchmark (and CUDA events), alternating in rounds:
    each ratio with its spread (target: 3% on a CPU, 2% on CUDA)."""
    trust.crosscheck(runner(session), session.posargs, ROOT)


@suite_session(python=False)
def repeat(session: nox.Session) -> None:
    """The same cells three times back to back: each cell's spread of medians (target: 3% on a
    CPU, 1.5% on an H100)."""
    trust.repeat(runner(session), session.posargs, ROOT)


@suite_session(python=False)
def coverage(session: nox.Session) -> None:
    """A benchmark, not a test (docs/intervals.md): the same full-size cells 11 times (the last held out)
    with 1 process per cell and with 3; how often a repetition's median (and paired speed-up) lies inside
    another's 95% interval (target 90-97%), and the machine's between-run noise to set as run_noise_pct /
    speedup_noise_pct. `-- --models ResNet --times 10 --hold-out 1 --build B` narrow it."""
    glue.coverage(session, ROOT)


@suite_session(python=MERGE_PYTHON)
def gate(session: nox.Session) -> None:
    """`compare`'s false-positive and detection rates: A/A smoke runs and runs with compiled calls
    slowed by 20% (SUITE_FAULT=slow:1.2), then `calibrate` (results/<run>/calibration.md)."""
    glue.gate(session, ROOT, MERGE_PACKAGES)


@suite_session(python=MERGE_PYTHON)
def pairs(session: nox.Session) -> None:
    """The pair's own figures (docs/pairs.md): an A/A pair of the smoke cells, their compiled cells
    with the new side's compiled calls slowed by 10%, an A/A pair of full-size ResNet-50 and
    ViT-B/16; each compared with both rules (results/<run>-<what>.md)."""
    glue.pairs(session, ROOT, MERGE_PACKAGES)


@suite_session(name="overlap-aa", python=MERGE_PYTHON)
def overlap_aa(session: nox.Session) -> None:
    """Whether timing beside the next wave's compile (`run --overlap`) moves the figures: the same
    smoke cells with the phases apart and with --overlap, alternating (3 pairs; `-- --pairs N
    --models ...`), then `calibrate` with the overlap runs in the place of its slowed runs."""
    glue.overlap_aa(session, ROOT, MERGE_PACKAGES)


@suite_session(python=False)
def lock(session: nox.Session) -> None:
    """Regenerate hash-locked requirements with pip-compile, on each build's own Python
    (Linux x86_64, as in the images): `nox -s lock -- stable nightly`. `-- --check`
    instead downloads every locked wheel for the image's platform, verifying each hash,
    and checks that their dependencies are all in the lock (network: PyPI)."""
    requirements.lock(runner(session), session.posargs, ROOT)


@suite_session(python=MERGE_PYTHON, reuse_venv=True)
def merge(session: nox.Session) -> None:
    """Tables, plots and the index page from raw CSVs (host side: pandas + matplotlib).

    `nox -s merge -- RUN_DIR... [-o OUT] [--offline]`; without a run folder, the newest run
    under results/. Its virtualenv is kept: `--offline` (what an offline bench asks for)
    installs nothing and uses the pandas and matplotlib an earlier merge installed."""
    glue.merge(session, ROOT, MERGE_PACKAGES)


# The history (docs/history.md): the results store, trends, change points, bisect.
@suite_session(python=MERGE_PYTHON, reuse_venv=True)
def history(session: nox.Session) -> None:
    """`python -m suite history VERB ...` in a kept virtualenv with DuckDB, pyarrow, pandas and
    ruptures: `nox -s history -- ingest results/<run>`, `-- report`, `-- verdict RUN_DIR`. An
    `s3://` store also needs s3fs, an `hf://` one huggingface_hub: `-- --with s3fs ...`."""
    glue.history(session)


@suite_session(python=MERGE_PYTHON)
def bisect(session: nox.Session) -> None:
    """The first bad nightly of one cell: `nox -s bisect -- --cell "ResNet,4,reduce-overhead"
    --good 2026-12-02 --bad 2026-12-09 [--build nightly-current] [--profile full] [--device cuda]`:
    each date tried is built as its own image and judged by the gate (suite/sessions/bisect.py)."""
    glue.bisect(session, ROOT)


@suite_session(python=MERGE_PYTHON)
def confirm(session: nox.Session) -> None:
    """A change point measured again before an issue: `nox -s confirm -- [--store URL] [--change
    ID] [--device cuda] [--issues]`: the last good and first bad nightly of each held regression
    awaiting one, built, then run back to back, judged and kept (suite/sessions/bisect.py)."""
    glue.confirm(session, ROOT)


# Benchmarks of the history (not in `tests`): the change-point rule's error rates; a generated year.
@suite_session(name="history-calibrate", python=MERGE_PYTHON)
def history_calibrate(session: nox.Session) -> None:
    """False-alarm and detection rates of the change-point rule (`-- --histories N`)."""
    glue.with_history(session, "-m", "suite", "history", "calibrate")


@suite_session(name="history-scale", python=MERGE_PYTHON)
def history_scale(session: nox.Session) -> None:
    """A generated year of nights (full profile, three builds, two GPUs) backfilled night by night
    in one `history ingest`, `history report` timed twice, the night after (ingest, verdict,
    report), and the year one run per call (`-- --nights N --work DIR --reuse --store URL --no-per-night`)."""
    glue.with_history(session, "-m", "suite.benchmarks.history_scale")


# The pages (docs/pages.md), opened in Debian's Chromium (`apt-get install chromium`) by Playwright.
@suite_session(name="pages-screenshot", python=MERGE_PYTHON)
def pages_screenshot(session: nox.Session) -> None:
    """The pages' screenshot (docs/img/run-page.png, in docs/pages.md): the committed smoke run's page, merged
    anew into a scratch folder and opened in headless Chromium, a point hovered.
    `-- [RUN_DIR] [PNG]` for another run or file."""
    glue.pages_script(session, "tools.pages.screenshot")


@suite_session(name="pages-bench", python=MERGE_PYTHON)
def pages_bench(session: nox.Session) -> None:
    """A benchmark, not a test: the weight of a generated full-profile run's page (108 cells x 2
    builds) and of a year of history's, and how soon each is ready in headless Chromium
    (`-- --repeat N --nights N`)."""
    glue.pages_script(session, "tools.pages.bench")
