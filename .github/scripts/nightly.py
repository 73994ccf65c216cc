"""Helpers of the nightly benchmark workflow (.github/workflows/bench-nightly.yml).

    python .github/scripts/nightly.py matrix                      # setup job: run id + job matrix
    python .github/scripts/nightly.py price                       # setup job: each shard's cost
    python .github/scripts/nightly.py resolve                     # setup job: the run's night
    python .github/scripts/nightly.py cleanup                     # bench job: leftovers, old images
    python .github/scripts/nightly.py space                       # bench job: room for images, rows
    python .github/scripts/nightly.py shard RUN_DIR               # bench job: its cells; fail or not
    python .github/scripts/nightly.py collect ARTIFACTS RUN_DIR   # merge job: gather raw CSVs
    python .github/scripts/nightly.py merge-summary RUN_DIR LOG   # merge job: torn or skipped files
    python .github/scripts/nightly.py history RUN_DIR             # merge job: the history
    python .github/scripts/nightly.py night RUN_DIR               # merge job: the night's summary
    python .github/scripts/nightly.py tidy                        # merge job: the merged uploads go

`matrix` reads GPU_LABELS (a JSON list of runner label sets), SHARDS and BUILDS from the
environment, so no workflow input is ever pasted into a script, and writes `run_id`,
`matrix` and `shards` to $GITHUB_OUTPUT; `resolve` resolves tonight's nightly once for the run
(every build of BUILDS that follows it), or keeps the night an earlier attempt of the run
resolved (EARLIER_NIGHT), and writes it as `nightly` (and to NIGHT_FILE, for the re-runs).
`price` checks PROFILE and BUILDS and writes to the job summary what one shard costs on a GPU:
every build it runs (the stable build first, as `nox -s bench-nightly` does, then BUILDS),
priced by `python -m suite plan --device cuda`, and the shard count that fits the benchmark
step's time limit when it does not. `cleanup` removes the benchmark containers this runner left
(a cancelled job can leave one holding the GPU), all but the newest images of each build and the
build cache older than a week. `space` fails the job in one line when the disk where Docker
keeps its images (or the one of the results) has less room than BENCH_MIN_FREE_GB. `shard`
writes a shard's cells by outcome (tally.py) and its failed cells to the job summary, and fails
the job on a cell in error or timeout (unless ALLOW_FAILED is true), after its rows were
uploaded, so "Re-run failed jobs" runs exactly those shards again and their resume exactly
those cells; or on skipped and OOM cells above MAX_UNMEASURED_PCT. `collect` gathers every
upload of every job (each job uploads its rows several times, and again in each attempt:
shard_rows.py) into RUN_DIR/raw/, one CSV per name, refusing one name from two jobs (two label
sets that reach the same GPU model would overwrite each other's results), and keeps which job
delivered what for `night`. `merge-summary` lists every raw CSV the strict merge would skip or
cut, and the merge's own warnings. `night` writes the night's summary: a link to the run, each
shard's cells and the night's by outcome, the cells slower beyond the history's rule awaiting
confirmation (SUMMARY_PARTS/slower.json, from `history verdict --slower`), the failed cells,
the jobs' deliveries. `tidy` deletes this run's uploads made while a shard ran
(`-rows-<n>`) whose job's final upload of that attempt is there (it holds every row they held).
The run id is the run's creation time (asked of GitHub's API: the same in every attempt) and
its GitHub id. Standard library only (the CSVs are read with the suite's own reader, standard
library only too; `price` runs the suite, which reads matrix.yaml with PyYAML): it runs before
anything is installed. Errors are one `::error::` line and exit status 1.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import shard_rows  # beside this script
import tally

GENERIC_LABELS = frozenset({"self-hosted", "linux", "x64", "gpu"})
MAX_JOBS = 256  # GitHub's limit for one matrix
_SLUG = re.compile(r"[^a-z0-9.]+")
EXAMPLE = '[["self-hosted", "linux", "gpu", "a100"], ["self-hosted", "linux", "gpu", "t4"]]'
# The benchmark containers carry this label, its value the runner that started them
# (RUNNER_NAME; `local` outside Actions): the clean-up stops only its own runner's, so
# runners that share a host (one per GPU) leave each other's running jobs alone.
CONTAINER_LABEL = "io.torch-compile-suite.runner"
IMAGE_REPOSITORY = "torch-compile-suite"  # tags <build>-<12 hex digest of the inputs>
KEEP_IMAGES = 2  # per build: the newest (the one in use) and the one before it
BUILD_CACHE_KEEP = "168h"  # `docker builder prune --filter until=`: a week of build cache stays
MIN_FREE_GB = 40  # default of BENCH_MIN_FREE_GB: two images being built (5-6 GB each) and their cache
NIGHTLY_DATE_ARG = "TORCH_NIGHTLY_DATE"  # a nightly build that resolves its night (sessions/nightly.py)
_DURATION = re.compile(r"(?:(\d+) day[s]?, )?(\d+):(\d\d):(\d\d)")


class Invalid(ValueError):
    """A workflow input that cannot be used; the message says which and why."""


@dataclass(frozen=True)
class Job:
    name: str  # short GPU name from the labels, e.g. "a100"
    labels: tuple[str, ...]
    shard: int
    shards: int

    @property
    def artifact(self) -> str:
        return f"raw-{self.name}-shard-{self.shard}-of-{self.shards}"

    def as_matrix_entry(self) -> dict[str, object]:
        return {
            "name": self.name,
            "labels": list(self.labels),
            "shard": self.shard,
            "shards": self.shards,
            "artifact": self.artifact,
        }


def label_sets(text: str) -> list[tuple[str, ...]]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Invalid(f"gpu_labels: not JSON ({exc.msg}); e.g. {EXAMPLE}") from None
    if not isinstance(value, list) or not value or not all(isinstance(s, list) and s for s in value):
        raise Invalid(f"gpu_labels: must be a non-empty list of non-empty label lists, e.g. {EXAMPLE}")
    for labels in value:
        if not all(isinstance(label, str) and label.strip() for label in labels):
            raise Invalid(f"gpu_labels: {labels}: every label must be a non-empty string")
    return [tuple(labels) for labels in value]


def short_name(labels: tuple[str, ...]) -> str:
    """What tells this label set apart ("a100"), for job and artifact names."""
    specific = [label for label in labels if label.lower() not in GENERIC_LABELS] or list(labels)
    return _SLUG.sub("-", "-".join(specific).lower()).strip("-") or "runner"


def shard_count(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise Invalid(f"shards: {text!r} is not a whole number >= 1")
    return int(text)


def plan_jobs(gpu_labels: str, shards: str) -> list[Job]:
    """One job per label set x shard, with distinct names."""
    sets, count = label_sets(gpu_labels), shard_count(shards)
    names = [short_name(labels) for labels in sets]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise Invalid(f"gpu_labels: label sets share the name {twice[0]!r}: list each GPU type once")
    if len(sets) * count > MAX_JOBS:
        raise Invalid(f"{len(sets)} label sets x {count} shards is over GitHub's {MAX_JOBS} jobs per matrix")
    return [Job(n, ls, i, count) for n, ls in zip(names, sets, strict=True) for i in range(1, count + 1)]


def run_id(now: datetime, github_run_id: str) -> str:
    """Shared by every job of one workflow run, and by every attempt of it: `now` is when the
    run was created (run_created), not when this attempt started."""
    return f"nightly-{now:%Y%m%d-%H%M}-gh{github_run_id}"


Fetch = Callable[[str, dict[str, str]], bytes]  # (url, headers) -> body


def fetch_url(url: str, headers: dict[str, str]) -> bytes:
    request = urllib.request.Request(url, headers=headers)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def run_created(environ: Mapping[str, str], fetch: Fetch = fetch_url) -> datetime:
    """When this workflow run was created: GitHub's `created_at`, the same in every attempt, so
    "Re-run all jobs" (which re-runs this setup job too) keeps the run id. Outside Actions: now.
    An attempt after the first that cannot ask GitHub stops here: a new id would put its rows
    in another run folder than the first attempt's."""
    run = environ.get("GITHUB_RUN_ID", "")
    if not run:
        return datetime.now(timezone.utc)
    api = environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    url = f"{api}/repos/{environ.get('GITHUB_REPOSITORY', '')}/actions/runs/{run}"
    token = environ.get("GH_TOKEN", "")
    headers = {"Accept": "application/vnd.github+json", "Authorization": f"Bearer {token}"}
    try:
        created = json.loads(fetch(url, headers))["created_at"]
        return datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        if environ.get("GITHUB_RUN_ATTEMPT", "1") not in ("", "1"):
            why = f"cannot read when run {run} was created ({exc})"
            raise Invalid(f"{why}: this attempt's run id would differ from the first's") from None
        print(f"::warning::cannot read when run {run} was created ({exc}); the run id uses this moment")
        return datetime.now(timezone.utc)


def builds_list(text: str) -> list[str]:
    """BUILDS as written, `nightly, nightly-current` or `nightly,nightly-current`."""
    return [b.strip() for b in text.split(",") if b.strip()]


def cmd_matrix() -> None:
    jobs = plan_jobs(os.environ.get("GPU_LABELS", ""), os.environ.get("SHARDS", ""))
    rid = run_id(run_created(os.environ), os.environ.get("GITHUB_RUN_ID", "local"))
    outputs = {
        "run_id": rid,
        "matrix": json.dumps({"include": [j.as_matrix_entry() for j in jobs]}),
        "shards": str(jobs[0].shards),
    }
    with open(os.environ.get("GITHUB_OUTPUT", os.devnull), "a", encoding="utf-8") as fh:
        fh.writelines(f"{k}={v}\n" for k, v in outputs.items())
    for k, v in outputs.items():
        print(f"{k}: {v}")


# --- price: what one shard costs, every build it runs -------------------------------------


def shard_builds(stable: Sequence[str], builds: str) -> list[str]:
    """The builds each bench job runs, in order: `nox -s bench-nightly` runs the cells of what
    the chosen builds are compared with first (`companions`), then the chosen ones."""
    chosen = builds_list(builds)
    if not chosen:
        raise Invalid("builds: empty; give a comma list of builds of matrix.yaml")
    return [b for b in stable if b not in chosen] + chosen


def seconds(text: str) -> int:
    """suite/cost.py's format_duration back to seconds ("1:02:03", "2 days, 0:00:10")."""
    match = _DURATION.fullmatch(text.strip())
    if match is None:
        raise Invalid(f"cannot read the duration {text!r} in `suite plan`'s output")
    days, h, m, s = (int(g or 0) for g in match.groups())
    return ((days * 24 + h) * 60 + m) * 60 + s


def hms(total: int) -> str:
    return f"{total // 3600}:{total // 60 % 60:02d}:{total % 60:02d}"


def shard_costs(plan_output: str) -> list[int]:
    """The per-shard estimates from `suite plan --shard i/n`'s last line."""
    line = next((ln for ln in plan_output.splitlines() if ln.startswith("estimated per shard:")), "")
    found = re.findall(r"\d+/\d+ ((?:\d+ days?, )?\d+:\d\d:\d\d)", line)
    if not found:
        raise Invalid("`suite plan` printed no per-shard estimate")
    return [seconds(t) for t in found]


STEP_LIMIT_MIN = 290  # the benchmark step's timeout-minutes in bench-nightly.yml (a test keeps them equal)
_RATES = re.compile(
    r"^estimated total \S.* on a (GPU|CPU) \(suite/spec/cost\.py at the rates of (.+?): ", re.M
)


def rates_of(plan_output: str) -> str:
    """Whose rates `suite plan` priced with; a CPU's is refused: the bench jobs run on GPUs, and
    a CPU's estimate is many times theirs (shards sized by it would be far too many)."""
    found = _RATES.search(plan_output)
    if found is None:
        raise Invalid("`suite plan` did not say which device's rates it priced with")
    if found[1] != "GPU":
        raise Invalid(f"`suite plan` priced with a CPU's rates ({found[2]}), not a GPU's")
    return found[2]


def price(profile: str, builds: list[str], shards: int, plan: Callable[[list[str]], str]) -> list[str]:
    """Summary lines: each build's cells and per-shard estimate on a GPU (the GPU rates of
    suite/spec/cost.py, whatever machine this job runs on), the shard totals, and a warning when
    the fullest shard would not fit the benchmark step's time limit."""
    runs = ", ".join(f"`{b}`" for b in builds)
    lines = [
        f"## Plan: profile `{profile}`, {shards} shard(s); each shard runs {runs}",
        "",
        "| build | cells | estimated per shard on a GPU |",
        "| --- | --- | --- |",
    ]
    totals = [0] * shards
    source = ""
    for build in builds:
        out = plan(["--profile", profile, "--build", build, "--device", "cuda", "--shard", f"1/{shards}"])
        source = rates_of(out)
        costs = shard_costs(out)
        totals = [t + c for t, c in zip(totals, costs, strict=True)]
        cells = out.splitlines()[0].split(": ", 1)[-1].split(" cell")[0] if out else "?"
        lines.append(f"| `{build}` | {cells} | {', '.join(hms(c) for c in costs)} |")
    lines.append(
        f"| **each shard** | | {', '.join(f'{i}/{shards} {hms(t)}' for i, t in enumerate(totals, 1))} |"
    )
    lines += ["", f"Estimates from suite/spec/cost.py at the GPU rates of {source}, one cell after another "
              "(a rough model; the ratios count); image builds come on top."]  # fmt: skip
    return lines + fit_lines(totals, shards)


def fit_lines(totals: Sequence[int], shards: int) -> list[str]:
    """A warning, with the shard count that fits, when the fullest shard's estimate is over the
    benchmark step's limit (its cells past the limit would be cut off, every night)."""
    limit = STEP_LIMIT_MIN * 60
    if not totals or max(totals) <= limit:
        return []
    need = shards * max(totals) // limit + 1  # the split balances cost: the fullest shard shrinks alike
    over = f"**Over the benchmark step's {STEP_LIMIT_MIN} minutes**"
    return ["", f"{over}: the fullest shard is estimated at {hms(max(totals))}; set the shards (input "
            f"`shards`, variable BENCH_SHARDS) to {need} or more."]  # fmt: skip


def run_plan(args: list[str]) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "suite", "plan", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise Invalid(f"suite plan {' '.join(args)}: {detail}")
    return proc.stdout


def _builds(matrix: Path = Path("matrix.yaml")) -> dict[str, dict]:
    import yaml  # installed by the plan job's step before `price`

    return yaml.safe_load(matrix.read_text(encoding="utf-8"))["builds"]


def follows(spec: dict) -> bool:
    """A nightly build that resolves its night at run time (not fixed wheel URLs)."""
    args = spec.get("build_args") or {}
    return spec.get("kind") == "nightly" and NIGHTLY_DATE_ARG in args and "TORCH_WHEEL_URL" not in args


def companions(chosen: Sequence[str], matrix: Path = Path("matrix.yaml")) -> list[str]:
    """What `nox -s bench-nightly` runs first (suite.sessions.nightly.companions): a followed
    nightly's current release (`kind: release` with a container), the guide's nightly's stable
    build. `suite plan` has checked the file already."""
    builds = _builds(matrix)
    picked = [builds.get(name) or {} for name in chosen]
    kinds = {"release" if follows(b) else "stable" for b in picked if b.get("kind") == "nightly"} or {
        "stable"
    }
    return [n for n, b in builds.items() if b.get("kind") in kinds and b.get("container")]


def followed(chosen: Sequence[str], matrix: Path = Path("matrix.yaml")) -> list[str]:
    builds = _builds(matrix)
    return [name for name in chosen if follows(builds.get(name) or {})]


def cmd_price() -> None:
    shards = shard_count(os.environ.get("SHARDS", ""))
    profile = os.environ.get("PROFILE", "") or "full"
    chosen = builds_list(os.environ.get("BUILDS", ""))
    builds = shard_builds(companions(chosen), os.environ.get("BUILDS", ""))
    lines = price(profile, builds, shards, run_plan)
    text = "\n".join(lines) + "\n"
    print(text)
    if any(line.startswith("**Over the benchmark step") for line in lines):
        print(f"::warning::{lines[-1].replace('**', '')}")
    with open(os.environ.get("GITHUB_STEP_SUMMARY", os.devnull), "a", encoding="utf-8") as fh:
        fh.write(text)


# --- resolve: tonight's nightly, once for the whole run -------------------------------------

Resolver = Callable[[list[str]], str]


def run_resolve(args: list[str]) -> str:
    """containers/nightly_pin.py with these arguments; its JSON line (Invalid: its one line)."""
    proc = subprocess.run(
        [sys.executable, "containers/nightly_pin.py", *args], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise Invalid((proc.stderr.strip().splitlines() or ["(no output)"])[-1])
    return proc.stdout


def resolve(builds: Sequence[str], date: str, ask: Resolver = run_resolve) -> tuple[dict, list[str]]:
    """{build: its night} for every build of the run that follows the nightly, and summary
    lines. The index is SUITE_NIGHTLY_INDEX (nightly_pin.py reads it), else matrix.yaml's."""
    found: dict[str, dict] = {}
    lines = []
    for name in builds:
        args = ["resolve", "--build", name] + (["--date", date] if date else [])
        found[name] = json.loads(ask(args))
        night = found[name]
        git = night.get("git_sha", "")[:12] or "read from the installed torch"
        lines.append(
            f"- `{name}`: the torch nightly of {night['date']}: torch `{night['torch']}` "
            f"(sha256 `{night['torch_sha256'][:16]}`), torchvision `{night['torchvision']}`, "
            f"{night.get('triton') or 'triton as installed'}, git {git}"
        )
    return found, lines


NIGHT_ARTIFACT = "night-attempt-"  # + the attempt: the plan job's night, kept for the run's re-runs
NIGHT_FILE = "night.json"


def earlier_night(folder: Path) -> tuple[dict, str] | None:
    """The night the first attempt of this run resolved (every attempt's plan job uploads its
    own as `night-attempt-<a>`; a re-run downloads them into `folder`), and that attempt's name."""
    found = [
        p
        for p in folder.glob(f"{NIGHT_ARTIFACT}*/{NIGHT_FILE}")
        if p.parent.name[len(NIGHT_ARTIFACT) :].isdigit()
    ]
    if not found:
        return None
    first = min(found, key=lambda p: int(p.parent.name[len(NIGHT_ARTIFACT) :]))
    try:
        night = json.loads(first.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise Invalid(f"{first}: the earlier attempt's night is unreadable ({exc})") from None
    if not isinstance(night, dict):
        raise Invalid(f"{first}: the earlier attempt's night is not an object {{build: night}}")
    return night, first.parent.name


def keep_or_resolve(builds: Sequence[str], date: str, earlier: tuple[dict, str] | None,
                    ask: Resolver = run_resolve) -> tuple[dict, list[str]]:  # fmt: skip
    """The run's night: an earlier attempt's where there is one (a re-run of the run never
    measures another night, whatever the index gained since), else resolved now."""
    kept, where = earlier if earlier is not None else ({}, "")
    fresh = [b for b in builds if b not in kept]
    found, lines = resolve(fresh, date, ask)
    for name in builds:
        if name in kept:
            found[name] = kept[name]
            lines.append(
                f"- `{name}`: the torch nightly of {kept[name]['date']}, kept from {where} of this run"
            )
    return found, lines


def cmd_resolve() -> None:
    chosen = followed(builds_list(os.environ.get("BUILDS", "")))
    earlier = earlier_night(Path(os.environ.get("EARLIER_NIGHT", "") or "earlier-night"))
    found, lines = keep_or_resolve(chosen, os.environ.get("NIGHTLY_DATE", "").strip(), earlier)
    with open(os.environ.get("GITHUB_OUTPUT", os.devnull), "a", encoding="utf-8") as fh:
        fh.write(f"nightly={json.dumps(found, sort_keys=True)}\n")
    keep = os.environ.get("NIGHT_FILE", "")
    if keep:
        Path(keep).parent.mkdir(parents=True, exist_ok=True)
        Path(keep).write_text(json.dumps(found, sort_keys=True) + "\n", encoding="utf-8")
    text = "\n".join(
        ["## Tonight's nightly", "", *(lines or ["no build of this run follows the nightly"]), ""]
    )
    print(text)
    with open(os.environ.get("GITHUB_STEP_SUMMARY", os.devnull), "a", encoding="utf-8") as fh:
        fh.write(text + "\n")


# --- cleanup: this runner's leftover containers, old images --------------------------------

Docker = Callable[[list[str]], str]


def docker_cli(cmd: list[str]) -> str:
    """Run one docker command; its stdout (a failure is reported, not raised: clean-up
    must never fail the job it protects)."""
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
        print(f"::warning::{' '.join(cmd[:3])}: {detail}")
    return proc.stdout


def cleanup(runner: str, docker: Docker, keep: int | None = KEEP_IMAGES) -> list[str]:
    """Remove this runner's benchmark containers (running or not) and, unless `keep` is
    None, all but the `keep` newest images of each build; return what was done, one line each."""
    done = []
    ids = docker(
        ["docker", "ps", "--all", "--quiet", "--filter", f"label={CONTAINER_LABEL}={runner}"]
    ).split()
    if ids:
        docker(["docker", "rm", "--force", *ids])
        done.append(f"removed {len(ids)} leftover container(s) of runner {runner}: {' '.join(ids)}")
    if keep is not None:
        done += prune_images(docker, keep)
    return done or ["nothing to clean up"]


def prune_images(docker: Docker, keep: int) -> list[str]:
    """All but the `keep` newest images of each build (by tag prefix), then dangling layers."""
    done = []
    listing = docker(["docker", "image", "ls", IMAGE_REPOSITORY, "--format", "{{.Tag}}\t{{.CreatedAt}}"])
    by_build: dict[str, list[tuple[str, str]]] = {}
    for row in listing.splitlines():
        tag, _, created = row.partition("\t")
        if "-" in tag and created:
            by_build.setdefault(tag.rsplit("-", 1)[0], []).append((created[:25], tag))
    old = [tag for images in by_build.values() for _, tag in sorted(images, reverse=True)[keep:]]
    if old:
        # without --force: an image a running container uses stays
        docker(["docker", "image", "rm", *(f"{IMAGE_REPOSITORY}:{t}" for t in sorted(old))])
        done.append(f"removed {len(old)} old image(s): {', '.join(sorted(old))}")
    docker(["docker", "image", "prune", "--force"])
    # the layers BuildKit keeps for rebuilds grow with every new image: a week's worth stays
    docker(["docker", "builder", "prune", "--force", "--filter", f"until={BUILD_CACHE_KEEP}"])
    return done


# --- space: room where Docker keeps its images --------------------------------------------------


def free_gb(path: Path) -> float:
    return shutil.disk_usage(path).free / 2**30


def check_space(
    docker: Docker, results: Path, minimum: float, free: Callable[[Path], float] = free_gb
) -> str:
    """One line of the free space where Docker keeps images and where results go; Invalid when
    either has less than `minimum` GB (an image build that fills the disk fails late, and a full
    results disk stops the suite before its next cell)."""
    root = docker(["docker", "info", "--format", "{{.DockerRootDir}}"]).strip()
    places = [("Docker's storage", Path(root) if root else None), ("the results", results)]
    said = []
    for what, path in places:
        if path is None:
            said.append(f"{what}: unknown (docker info names no DockerRootDir)")
            continue
        gb = None
        for where in (path, *path.parents):  # a folder the runner may not enter: its parent's disk
            try:
                gb = free(where)
                break
            except OSError:
                continue
        if gb is None:
            said.append(f"{what} ({path}): cannot tell")
            continue
        if gb < minimum:
            raise Invalid(
                f"only {gb:.1f} GB free on the disk of {what} ({path}), below BENCH_MIN_FREE_GB={minimum:g}: "
                "free space (docker system df; docker image prune -a) before the benchmark builds images"
            )
        said.append(f"{what} ({path}): {gb:.1f} GB free")
    return "; ".join(said)


def cmd_space() -> None:
    text = os.environ.get("BENCH_MIN_FREE_GB", "").strip() or str(MIN_FREE_GB)
    try:
        minimum = float(text)
    except ValueError:
        raise Invalid(f"BENCH_MIN_FREE_GB: {text!r} is not a number of GB") from None
    print(check_space(docker_cli, Path(os.environ.get("RESULTS", "results")), minimum))


def cmd_cleanup() -> None:
    for line in cleanup(os.environ.get("RUNNER_NAME", "local"), docker_cli):
        print(line)


# --- collect: the merge job's raw CSVs --------------------------------------------------------


def collect(artifacts: Path, run_dir: Path, expected: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Every upload of every job (`<artifact>-attempt-<a>[-rows-<n>]`) into run_dir/raw/, the
    uploads of one job joined per CSV name (shard_rows.gather); summary lines, and which job
    delivered which CSVs."""
    (run_dir / "raw").mkdir(parents=True, exist_ok=True)
    try:
        delivered = shard_rows.gather(artifacts, run_dir, expected)
    except shard_rows.Problem as exc:
        raise Invalid(str(exc)) from None
    lines = ["| job artifact | uploads | raw CSVs |", "| --- | --- | --- |"]
    for name in expected:
        made = len(shard_rows.uploads(artifacts, name))
        shown = ", ".join(f"`{f}`" for f in delivered[name])
        shown = shown or "none (the job failed, or its shard was empty)"
        lines.append(f"| {name} | {made} | {shown} |")
    if not any(delivered.values()):
        raise Invalid(f"no raw CSV in {artifacts}: every benchmark job failed before writing a row")
    return lines, delivered


PARTS_ENV = "SUMMARY_PARTS"  # a folder of the merge job: what its steps hand to the night's summary
JOBS_FILE, JOBS_TABLE, SLOWER_FILE, VERDICT_FILE = "jobs.json", "jobs.md", "slower.json", "verdict.md"


def parts() -> Path:
    folder = Path(os.environ.get(PARTS_ENV, "") or "summary-parts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def cmd_collect(artifacts: str, run_dir: str) -> None:
    """The jobs' rows into run_dir/raw/; which job delivered what, kept for the night's summary
    (`night`), which also lists it."""
    matrix = json.loads(os.environ.get("MATRIX", "") or '{"include": []}')
    expected = [entry["artifact"] for entry in matrix["include"]]
    lines, delivered = collect(Path(artifacts), Path(run_dir), expected)
    (parts() / JOBS_FILE).write_text(json.dumps(delivered, indent=1) + "\n", encoding="utf-8")
    (parts() / JOBS_TABLE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


# --- what a shard and the night measured; failed cells; the merge's torn or skipped files -----

RETRIED = tally.FAILED  # what a re-run runs again (skipped: this build cannot; oom: it would again)


def failed_cells(run_dir: Path) -> list[dict[str, str]]:
    """The cells of run_dir's raw CSVs whose kept row (the suite's rule: an ok row, else the
    latest) is an error or a timeout."""
    return [r for r in tally.kept_rows(sorted((run_dir / "raw").glob("*.csv"))) if r.get("status") in RETRIED]


def failed_lines(failed: Sequence[Mapping[str, str]], where: str) -> list[str]:
    """Every failed cell, its status and the first line of why."""
    if not failed:
        return [f"## No failed cells in {where}", ""]
    lines = [f"## {len(failed)} failed cell(s) in {where}", ""]
    lines += ["| build | model | batch | mode | scenario | status | why |", "| --- " * 7 + "|"]
    for row in failed:
        said = (row.get("error") or "").strip()
        why = said.splitlines()[0][:200].replace("|", "\\|") if said else ""
        cells = [row.get(k, "") for k in ("build", "model", "batch_size", "mode", "scenario", "status")]
        lines.append("| " + " | ".join([*cells, why]) + " |")
    return [*lines, ""]


def _summary(lines: Sequence[str]) -> None:
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.environ.get("GITHUB_STEP_SUMMARY", os.devnull), "a", encoding="utf-8") as fh:
        fh.write(text)


def _limit() -> float:
    try:
        return tally.max_share(os.environ.get("MAX_UNMEASURED_PCT", ""))
    except tally.Refused as exc:
        raise Invalid(str(exc)) from None


def cmd_shard(run_dir: str) -> None:
    """The bench job's last step: its cells by outcome and its failed cells to the summary; the
    job fails on a failed cell (so "Re-run failed jobs" runs this shard again) unless
    ALLOW_FAILED is true, and on skipped + OOM cells above MAX_UNMEASURED_PCT."""
    files = sorted((Path(run_dir) / "raw").glob("*.csv"))
    counted, limit = tally.tally(files), _limit()
    said, over = tally.verdict_line(counted, limit, "this shard")
    failed = failed_cells(Path(run_dir))
    skipped = sum(counted.skipped.values())
    head = f"## This shard: {counted.ok} ok, {skipped} skipped, {counted.oom} out of memory, "
    head += f"{counted.failed} failed"
    _summary([head, "", said, *tally.why_lines(counted), "", *failed_lines(failed, "this shard")])
    allowed = os.environ.get("ALLOW_FAILED", "").strip().lower() in ("true", "1", "yes", "on")
    if failed and not allowed:
        raise Invalid(
            f"{len(failed)} cell(s) ended in error or timeout (the summary lists them; their rows are "
            "uploaded): Re-run failed jobs runs them again; the input allow-failed-cells keeps the job green"
        )
    if over:
        raise Invalid(said + " (the summary says why; raise the variable to accept it)")


def run_link(environ: Mapping[str, str]) -> str:
    """The workflow run's page on GitHub (its artifacts hold the run page, tables/index.html)."""
    server, repo, run = (
        environ.get(k, "") for k in ("GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "GITHUB_RUN_ID")
    )
    return f"{server}/{repo}/actions/runs/{run}" if server and repo and run else ""


def slower_lines(folder: Path) -> list[str]:
    """The cells the history's verdict judged beyond the rule against their night before
    (`history verdict --slower`), awaiting confirmation; or why there is no verdict."""
    path = folder / SLOWER_FILE
    try:
        found = json.loads(path.read_text(encoding="utf-8"))["slower"]
    except (OSError, ValueError, KeyError, TypeError):
        return ["No verdict of the history this time (its step did not finish: its log says why)."]
    if not found:
        return ["No cell slower beyond the rule against the night before."]
    lines = [f"**{len(found)} cell(s) slower beyond the rule against the night before, awaiting "
             "confirmation** (the change-point rule over the nights, then history-confirm measures each "
             "again; an issue only where it agrees):", "",
             "| night | cell | verdict | new / before |", "| --- | --- | --- | --- |"]  # fmt: skip
    for s in found:
        ratio = f"{s['ratio']:.3f}" if isinstance(s.get("ratio"), (int, float)) else "—"
        lines.append(f"| {s['night']} | {s['cell']} | {s['verdict']} | {ratio} |")
    return lines


def night_lines(
    run_dir: Path, folder: Path, environ: Mapping[str, str], limit: float
) -> tuple[list[str], bool]:
    """The night's summary: a link to the run, each shard's cells by outcome and the night's,
    why cells were skipped, the share that measured nothing, the cells slower beyond the rule,
    the failed cells, which job delivered what. True when skipped + OOM are over the share."""
    raw = run_dir / "raw"
    try:
        delivered = json.loads((folder / JOBS_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        delivered = {p.name: [p.name] for p in sorted(raw.glob("*.csv"))}  # no jobs' list: per CSV
    shards = [(job, tally.tally(raw / f for f in csvs) if csvs else None) for job, csvs in delivered.items()]
    night = tally.tally(sorted(raw.glob("*.csv")))
    said, over = tally.verdict_line(night, limit, "the night")
    link = run_link(environ)
    lines = [f"## The night of {run_dir.name}", ""]
    if link:
        artifact = f"`bench-{run_dir.name}-attempt-<a>`"
        lines += [f"[The run on GitHub]({link}): its artifact {artifact} holds the run page "
                  "(tables/index.html); with BENCH_PAGES on, the pages job links it.", ""]  # fmt: skip
    lines += [*tally.table(shards), "", said, *tally.why_lines(night), "", *slower_lines(folder), ""]
    lines += failed_lines(failed_cells(run_dir), "this run")
    table = folder / JOBS_TABLE
    if table.is_file():
        lines += ["## Benchmark jobs", "", table.read_text(encoding="utf-8").rstrip("\n"), ""]
    return lines, over


def cmd_night(run_dir: str) -> None:
    """The merge job's summary of the night (after the merge and the history's verdict); a
    warning when skipped + OOM are over the share (the bench jobs that measured them failed)."""
    lines, over = night_lines(Path(run_dir), parts(), os.environ, _limit())
    _summary(lines)
    if over:
        print(f"::warning::{next(ln for ln in lines if 'BENCH_MAX_UNMEASURED_PCT' in ln)}")


def file_problems(run_dir: Path) -> list[str]:
    """Every raw CSV the merge would skip or cut (empty, another header, torn or unreadable
    rows), one line each: the strict merge stops on the first, the summary lists them all."""
    results = tally.suite_results()
    said = []
    for path in sorted((run_dir / "raw").glob("*.csv")):
        try:
            read = results.read_rows(path)
        except (OSError, ValueError) as exc:
            said.append(f"{path.name}: skipped ({exc})")
            continue
        if not read.rows:
            said.append(f"{path.name}: no rows (an empty file)")
        said += [f"{path.name}: {p.split(': ', 1)[-1]}" for p in read.problems]
    return said


def cmd_merge_summary(run_dir: str, log: str) -> None:
    """After the strict merge, pass or fail: the files it skipped or cut, and its own warnings."""
    said = file_problems(Path(run_dir))
    try:
        text = Path(log).read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    said += [ln.split("suite merge: ", 1)[-1] for ln in text.splitlines() if "suite merge: warning:" in ln
             or "suite merge: error:" in ln]  # fmt: skip
    if said:
        head = f"## The merge: {len(said)} torn or skipped file(s) or row(s)"
        _summary([head, "", *(f"- {s}" for s in said), ""])


# --- history: the night into the store, the verdict and the trends, issues (docs/history.md) ----

BRANCH_STORE = "results/history-branch/history"  # the history branch's checkout (history_branch.py)
# what an fsspec URL's filesystem needs besides the history's own packages
STORE_PACKAGES = {
    "s3://": "s3fs",
    "gs://": "gcsfs",
    "gcs://": "gcsfs",
    "hf://": "huggingface_hub",
    "az://": "adlfs",
}


def history_commands(run_dir: str, url: str, folder: Path, issues: bool) -> list[list[str]]:
    """`nox -s history` twice: ingest the night (a shard cut off mid-row still hands in the rest),
    then the verdict (its Markdown and the cells beyond the rule into `folder`, for the summary),
    opening or updating issues unless turned off."""
    store = url.strip() or BRANCH_STORE
    extra = next((["--with", pkg] for prefix, pkg in STORE_PACKAGES.items() if store.startswith(prefix)), [])
    base = ["nox", "-s", "history", "--", *extra]
    verdict = [*base, "verdict", run_dir, "--store", store, "-o", str(folder / VERDICT_FILE),
               "--slower", str(folder / SLOWER_FILE)]  # fmt: skip
    return [
        [*base, "ingest", run_dir, "--store", store, "--allow-partial"],
        verdict + (["--issues"] if issues else []),
    ]


def cmd_history(run_dir: str) -> None:
    issues = os.environ.get("ISSUES", "on").strip().lower() not in ("off", "false", "0", "no")
    for cmd in history_commands(run_dir, os.environ.get("HISTORY_URL", ""), parts(), issues):
        print("$ " + " ".join(cmd), flush=True)
        if subprocess.run(cmd, check=False).returncode != 0:
            raise Invalid(f"history: `{' '.join(cmd[:6])} ...` failed (its output is above)")


# --- tidy: the uploads made while a shard ran, once its final upload holds them --------------

Call = Callable[[str, dict[str, str], str], bytes]  # (url, headers, method) -> body
_ROWS_UPLOAD = re.compile(r"^(?P<final>.+-attempt-\d+)-rows-\d+$")


def call_api(url: str, headers: dict[str, str], method: str) -> bytes:
    request = urllib.request.Request(url, headers=headers, method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


def superfluous(names: Sequence[str]) -> list[str]:
    """The uploads made while a shard ran (`<job>-attempt-<a>-rows-<n>`) whose job's final upload
    of the same attempt (`<job>-attempt-<a>`) is there: it holds every row they held. Those of an
    attempt with no final upload (a runner lost mid-shard) stay: they are its only rows."""
    present = set(names)
    return sorted(n for n in names if (m := _ROWS_UPLOAD.match(n)) and m["final"] in present)


def tidy(environ: Mapping[str, str], call: Call = call_api) -> list[str]:
    """Delete this run's superfluous uploads (GitHub's REST API, the job's token with
    `actions: write`); one line of what was done. A failure to delete is a warning."""
    api = environ.get("GITHUB_API_URL", "https://api.github.com").rstrip("/")
    repo, run = environ.get("GITHUB_REPOSITORY", ""), environ.get("GITHUB_RUN_ID", "")
    headers = {
        "Accept": "application/vnd.github+json",
        "Authorization": f"Bearer {environ.get('GH_TOKEN', '')}",
    }
    listed: dict[str, int] = {}
    for page in range(1, 101):
        url = f"{api}/repos/{repo}/actions/runs/{run}/artifacts?per_page=100&page={page}"
        try:
            found = json.loads(call(url, headers, "GET"))["artifacts"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return [f"::warning::the run's artifacts could not be listed ({exc}): none deleted"]
        listed.update({a["name"]: a["id"] for a in found})
        if len(found) < 100:
            break
    gone, kept = superfluous(list(listed)), []
    for name in gone:
        try:
            call(f"{api}/repos/{repo}/actions/artifacts/{listed[name]}", headers, "DELETE")
        except OSError as exc:
            kept.append(f"::warning::{name} not deleted ({exc})")
    return [*kept, f"deleted {len(gone) - len(kept)} upload(s) made while the shards ran, each held by its "
            f"job's final upload; {len(listed) - len(gone)} artifact(s) left"]  # fmt: skip


def cmd_tidy() -> None:
    for line in tidy(os.environ):
        print(line)


# Each verb -> how many arguments it takes, and what does it.
VERBS: dict[str, tuple[int, Callable[..., None]]] = {
    "matrix": (0, cmd_matrix),
    "price": (0, cmd_price),
    "resolve": (0, cmd_resolve),
    "cleanup": (0, cmd_cleanup),
    "space": (0, cmd_space),
    "collect": (2, cmd_collect),
    "history": (1, cmd_history),
    "shard": (1, cmd_shard),
    "night": (1, cmd_night),
    "tidy": (0, cmd_tidy),
    "merge-summary": (2, cmd_merge_summary),
}


def main(argv: list[str]) -> int:
    verb = VERBS.get(argv[0]) if argv else None
    if verb is None or len(argv) != 1 + verb[0]:
        usage = "usage: nightly.py matrix | price | resolve | cleanup | space | collect ARTIFACTS RUN_DIR"
        usage += " | history RUN_DIR | shard RUN_DIR | night RUN_DIR | merge-summary RUN_DIR LOG | tidy"
        print(usage, file=sys.stderr)
        return 2
    try:
        verb[1](*argv[1:])
    except Invalid as exc:
        print(f"::error::{exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
