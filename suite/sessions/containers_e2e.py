"""`nox -s containers-e2e`: the container path run for real on this machine's Docker engine.

It builds the stable and nightly images from the project's own Dockerfile (substituting
only what cannot be had here: the pinned base image when it cannot be pulled, the torch
wheels by URL when their index is out of reach, pip's CA as a build secret), then runs the
container sessions on the CPU, as `nox -s bench-stable` and `nox -s bench-nightly` would:
both builds online, then the stable build again with `--offline` (`--network none`, the
cache read-only). It then checks what an operator relies on: every cell `ok`, the CSV's
`image` column naming the image, every file of the run owned by the invoking user (by the
image's user, uid 1000, when nox runs as root), the Hugging Face cache written through its
mount. It prints the figures (build, probe and container times, each cell's wall time) and
writes them to `<run>/e2e.md`. Minutes with cached images, far more without: not in CI.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from suite.errors import UsageError, first_line
from suite.results import read_rows, slug
from suite.sessions import docker, images, nightly, nightly_mirror, push
from suite.sessions.containers import bench_containers, default_builds
from suite.sessions.host import run_docker
from suite.sessions.imagebuild import Build, ensure_image
from suite.sessions.images import Substitutes
from suite.sessions.posargs import SelectionCheck, refuse_rest, take
from suite.sessions.runner import Runner, load, pick_builds
from suite.sessions.venv import reachable
from suite.spec import BuildSpec

PULL_TIMEOUT_S = 600


@dataclass
class Report:
    """The figures and findings of one e2e run, in the order they happened."""

    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def add(self, runner: Runner, line: str) -> None:
        self.lines.append(line)
        runner.log(f"e2e: {line}")

    def check(self, runner: Runner, ok: bool, passed: str, failed: str) -> None:
        self.add(runner, f"{'PASS' if ok else 'FAIL'}: {passed if ok else failed}")
        if not ok:
            self.failures.append(failed)


def pullable(image: str) -> tuple[bool, str]:
    """Whether the pinned base is here or can be pulled, and if not, docker's reason."""
    if run_docker(images.image_exists_command(image), capture_output=True).returncode == 0:
        return True, ""
    try:
        proc = run_docker(["docker", "pull", image], capture_output=True, timeout=PULL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, f"no answer in {PULL_TIMEOUT_S} s"
    return proc.returncode == 0, first_line(proc.stderr or proc.stdout, "(no output)")


def choose_substitutes(
    runner: Runner, report: Report, builds: Sequence[BuildSpec], root: Path
) -> Substitutes:
    """The pinned inputs where this machine reaches them, the substitutes where it does not."""
    local_bases = False
    for base in sorted({images.pinned_base(b) for b in builds}):
        ok, why = pullable(base)
        if not ok:
            report.add(
                runner, f"base {base} cannot be pulled ({why}): containers/local-bases.sh's stand-in instead"
            )
            local_bases = True
    urls = [
        b.build_args[k]
        for b in builds
        for k in ("TORCH_WHEEL_URL", "TORCHVISION_WHEEL_URL")
        if k in b.build_args
    ]
    unreachable = [u for u in urls if not reachable(u)]
    if unreachable:
        report.add(
            runner,
            f"{unreachable[0]} is out of reach: PyPI's torch and torchvision of the same versions instead",
        )
    if local_bases:
        make_local_bases(runner, report, builds, root)
    return Substitutes(local_bases=local_bases, torch_from_pypi=bool(unreachable))


LOCAL_BASES_TOOLS = ("debootstrap", "dpkg-deb", "gpg", "curl")


def make_local_bases(runner: Runner, report: Report, builds: Sequence[BuildSpec], root: Path) -> None:
    """Each stand-in base the builds need: there, or made now by containers/local-bases.sh (as
    root, with debootstrap), or one line naming the command that makes it."""
    wanted = {images.substitute_args(b, root, Substitutes(local_bases=True))["BASE_IMAGE"] for b in builds}
    for base in sorted(wanted):
        if run_docker(images.image_exists_command(base), capture_output=True).returncode == 0:
            continue
        kind = "ubuntu" if "ubuntu" in base else "python"
        command = f"sudo {images.LOCAL_BASES_SCRIPT} {kind}"
        missing = [tool for tool in LOCAL_BASES_TOOLS if shutil.which(tool) is None]
        if os.getuid() != 0 or missing:
            why = "it needs root" if os.getuid() != 0 else f"{', '.join(missing)} not installed"
            raise docker.DockerProblem(
                f"containers-e2e cannot run here: no image {base} (the stand-in for the pinned base, which "
                f"cannot be pulled) and it cannot be made now ({why}): make it with `{command}`"
            )
        started = time.monotonic()
        made = subprocess.run([str(root / images.LOCAL_BASES_SCRIPT), kind], check=False)
        if (
            made.returncode != 0
            or run_docker(images.image_exists_command(base), capture_output=True).returncode
        ):
            raise docker.DockerProblem(
                f"containers-e2e cannot run here: {images.LOCAL_BASES_SCRIPT} {kind} did not make {base} "
                f"(its output is above); run `{command}` to see why"
            )
        report.add(
            runner,
            f"made {base} with {images.LOCAL_BASES_SCRIPT} {kind} in {time.monotonic() - started:.1f} s",
        )


def image_size(tag: str) -> str:
    proc = run_docker(["docker", "image", "inspect", "--format", "{{.Size}}", tag], capture_output=True)
    size = proc.stdout.strip()
    return f"{int(size) / 1e9:.2f} GB" if proc.returncode == 0 and size.isdigit() else "size unknown"


def owners(path: Path) -> dict[int, list[str]]:
    """uid -> the files and folders under `path` (itself included) that uid owns."""
    found: dict[int, list[str]] = {}
    for top, dirs, files in os.walk(path):
        for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
            found.setdefault(os.lstat(name).st_uid, []).append(os.path.relpath(name, path))
    return found


def check_run(
    runner: Runner, report: Report, run_dir: Path, tags: dict[str, str], cells: int, uid: int
) -> None:
    """Every build's raw CSV: `cells` rows, all ok, the image named; every file owned by `uid`."""
    for build, tag in tags.items():
        csvs = sorted((run_dir / "raw").glob(f"{slug(build)}__*.csv"))
        rows = [row for path in csvs for row in read_rows(path).rows]
        bad = [f"{r['model']} {r['mode']}: {r['status']} {r['error']}" for r in rows if r["status"] != "ok"]
        where = f"{run_dir.name} {build}"
        report.check(
            runner, len(rows) == cells and not bad, f"{where}: {len(rows)} rows, all ok",
            f"{where}: {len(rows)} rows of {cells} expected; not ok: {'; '.join(bad) or 'none'}",
        )  # fmt: skip
        named = {r["image"] for r in rows}
        report.check(
            runner, named == {tag}, f"{where}: the image column names {tag}",
            f"{where}: the image column holds {sorted(named)}, not {tag}",
        )  # fmt: skip
        for r in rows:
            report.add(
                runner,
                f"cell {where} {r['model']} bs{r['batch_size']} {r['mode']}: wall {r['wall_s']} s, "
                f"median {r['median_ms']} ms, compile {r['compile_s'] or '-'} s, torch {r['torch_version']}",
            )
    by_uid = owners(run_dir)
    others = {u: paths[:3] for u, paths in by_uid.items() if u != uid}
    count = sum(map(len, by_uid.values()))
    report.check(
        runner, not others, f"{run_dir.name}: all {count} files and folders owned by uid {uid}",
        f"{run_dir.name}: files not owned by uid {uid}: {others}",
    )  # fmt: skip


@dataclass(frozen=True)
class Stage:
    """One container session of the run: its label, kind (bench-stable or bench-nightly), the run
    id's suffix and its own flags."""

    label: str
    prefix: str  # stable, nightly: the session (suite.sessions.containers.bench_containers)
    suffix: str  # "" or "-offline"
    extra: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pair:
    """The two builds the run builds and runs, and the sessions that run them."""

    name: str
    builds: tuple[str, ...]  # () for the guide's: the stable builds, then `nightly`
    stages: tuple[Stage, ...]


PAIRS = {
    # the guide's pair: the stable build, then its nightly (2.1, CUDA 11.8) with it
    "guide": Pair(
        "guide",
        (),
        (
            Stage("bench-stable", "stable", ""),
            Stage("bench-nightly", "nightly", "", ("--build", "nightly")),
            Stage("bench-stable --offline", "stable", "-offline", ("--offline",)),
        ),
    ),
    # bench-nightly's default: tonight's nightly against the current release
    "current": Pair(
        "current",
        ("release", "nightly-current"),
        (
            Stage("bench-nightly", "nightly", ""),
            Stage("bench-nightly --offline", "nightly", "-offline", ("--offline",)),
        ),
    ),
}


@dataclass(frozen=True)
class Options:
    """The session's flags."""

    models: str
    modes: str
    out: Path
    no_cache: bool
    pair: Pair
    mirror: Path


def parse(posargs: Sequence[str], root: Path) -> Options:
    args = list(posargs)
    flags = take(args, values=["--models", "--modes", "--out", "--pair", "--mirror"], switches=["--no-cache"])
    refuse_rest(
        args, "containers-e2e", "--models, --modes, --out, --pair guide|current, --mirror DIR, --no-cache"
    )
    out = Path(flags["--out"] or root / "results").resolve()
    pair = flags["--pair"] or "guide"
    if pair not in PAIRS:
        raise UsageError(
            "--pair", f"{pair!r}: use guide (stable and nightly) or current (release and nightly-current)"
        )
    mirror = Path(flags["--mirror"] or root / ".nox" / "containers-e2e" / "nightly-mirror").resolve()
    models, modes = flags["--models"] or "ViT", flags["--modes"] or "eager,default"
    return Options(models, modes, out, flags["--no-cache"], PAIRS[pair], mirror)


@contextmanager
def nightly_index(
    runner: Runner, report: Report, builds: Sequence[BuildSpec], root: Path, opts: Options
) -> Iterator[None]:
    """Where tonight's nightly comes from for the run: SUITE_NIGHTLY_INDEX when set, else the
    build's index when it answers, else a local index of the release's wheels renamed as a night
    (suite.sessions.nightly_mirror), served on the loopback with the image builds on the host's
    network; nothing for a pair that follows no nightly."""
    followed = [b for b in builds if nightly.follows(b)]
    if not followed or os.environ.get(nightly.INDEX_ENV) or reachable(followed[0].index_url):
        yield
        return
    release, following = nightly_mirror.stand_in_builds(list(load(root).builds.values()))
    t0 = time.monotonic()
    date = nightly_mirror.make_mirror(opts.mirror, release, following, root, images.pip_ca())
    with (
        nightly_mirror.serve(opts.mirror, port=nightly_mirror.PORT) as url,
        _environ({nightly.INDEX_ENV: url, images.BUILD_NETWORK_ENV: "host"}),
    ):
        report.add(
            runner,
            f"{following.index_url} is out of reach: a local index at {url} ({opts.mirror}, ready in "
            f"{time.monotonic() - t0:.1f} s) with {release.name}'s torch and torchvision renamed as the "
            f"night {date} of {following.name}, beside {release.name}'s locked dependencies: the "
            f"nightly's path, {release.name}'s code",
        )
        yield


@contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def build_images(runner: Runner, report: Report, builds: Sequence[BuildSpec], root: Path, how: Build) -> None:
    """The images first, timed on their own (a nightly's resolved first: its tag is its night's)."""
    matrix = load(root)
    resolved, _ = nightly.resolve_all(builds, root)
    for spec in resolved:
        tag = images.image_tag(spec, root, how.subs)
        there = run_docker(images.image_exists_command(tag), capture_output=True).returncode == 0
        t0 = time.monotonic()
        ensure_image(runner, matrix, spec, root, how)
        what = "was there" if there and not how.no_cache else f"built in {time.monotonic() - t0:.1f} s"
        what += " (--no-cache: every layer)" if how.no_cache else ""
        report.add(runner, f"image {tag}: {what}, {image_size(tag)}")


def check_night(runner: Runner, report: Report, run_dir: Path) -> None:
    """A run of a build that follows the nightly: its manifest names the night, and every row of
    that build carries it."""
    for name, night in nightly.kept_nights(run_dir).items():
        rows = [r for p in sorted((run_dir / "raw").glob(f"{slug(name)}__*.csv")) for r in read_rows(p).rows]
        dates = sorted({r["nightly_date"] for r in rows})
        report.check(
            runner, bool(rows) and dates == [night["date"]],
            f"{run_dir.name} {name}: manifest.json and all {len(rows)} rows name the night {night['date']}",
            f"{run_dir.name} {name}: manifest.json names the night {night['date']}, the rows {dates}",
        )  # fmt: skip


def containers_e2e(runner: Runner, posargs: Sequence[str], root: Path, check: SelectionCheck) -> None:
    """See the module's docstring. `nox -s containers-e2e [-- --pair guide|current --models M
    --modes a,b --no-cache --mirror DIR]`."""
    opts = parse(posargs, root)
    started = time.monotonic()
    try:
        docker.check_docker()
        client = images.buildkit_client()
    except docker.DockerProblem as exc:
        raise docker.DockerProblem(f"containers-e2e cannot run here: {exc}") from None
    report = Report()
    matrix = load(root)
    wanted = list(opts.pair.builds) or [*default_builds(matrix, "stable"), "nightly"]
    builds = pick_builds(matrix, None, wanted)
    server = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"], capture_output=True, text=True, check=False
    ).stdout.strip()
    cpu = f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"
    busy = os.getloadavg()[0]  # the figures below are this machine's, under this load
    who = f"uid {os.getuid()}" + (" (root: the containers run as uid 1000)" if os.getuid() == 0 else "")
    report.add(
        runner, f"pair {opts.pair.name}; engine {server}; builds with {client}; {cpu}, load {busy:.1f}; {who}"
    )
    subs = choose_substitutes(runner, report, builds, root)
    how = Build(subs=subs, rebuild=opts.no_cache, no_cache=opts.no_cache)
    with nightly_index(runner, report, builds, root, opts):
        build_images(runner, report, builds, root, how)
        runs = run_stages(runner, report, opts, root, check, subs)
    cells = len(opts.models.split(",")) * len(opts.modes.split(","))
    for rid, by_build in runs.items():
        check_run(runner, report, opts.out / rid, by_build, cells, uid_of_containers())
        check_night(runner, report, opts.out / rid)
    report.add(runner, f"total {time.monotonic() - started:.1f} s; load {os.getloadavg()[0]:.1f}")
    summary = opts.out / next(iter(runs)) / "e2e.md"
    summary.write_text("".join(f"- {line}\n" for line in report.lines))
    push.hand_over(summary)
    runner.log(f"e2e: the figures are in {summary}")
    if report.failures:
        runner.error(f"containers-e2e: {len(report.failures)} check(s) failed: {report.failures[0]}")


def run_stages(
    runner: Runner, report: Report, opts: Options, root: Path, check: SelectionCheck, subs: Substitutes
) -> dict[str, dict[str, str]]:
    """The pair's container sessions in turn, on the CPU; each run id's images by build."""
    run_id = f"e2e-{datetime.now(timezone.utc).strftime('%Y%m%d-%H%M%S')}"
    hf_cache = root / ".nox" / "containers-e2e" / "hf-cache"
    shutil.rmtree(hf_cache, ignore_errors=True)  # empty: whatever is in it afterwards, a container wrote
    flags = ["--device", "cpu", "--models", opts.models, "--modes", opts.modes]
    flags += ["--out", str(opts.out), "--no-merge", *subs.flags()]
    tags: dict[str, dict[str, str]] = {}
    for n, stage in enumerate(opts.pair.stages):
        rid = run_id + stage.suffix
        t0 = time.monotonic()
        done = bench_containers(
            runner, ["--run-id", rid, *stage.extra, *flags], root, stage.prefix, check, hf_cache
        )
        steps = ", ".join(f"{k} {v:.1f} s" for k, v in done.seconds.items() if not k.endswith(" image"))
        report.add(runner, f"{stage.label} ({rid}): {time.monotonic() - t0:.1f} s ({steps})")
        tags.setdefault(rid, {}).update(done.tags)
        if n == 0:  # the cache as the first online run left it
            check_cache(runner, report, hf_cache)
    return tags


def check_cache(runner: Runner, report: Report, hf_cache: Path) -> None:
    """The HF cache mount after the first online run: the folder and all in it the containers'
    uid's. What is in it depends on the build: transformers 4.31 writes `hub/version.txt` on
    import; transformers 5 writes nothing without a download (random weights: none)."""
    uid = uid_of_containers()
    written = owners(hf_cache)
    files = sorted(p for paths in written.values() for p in paths if (hf_cache / p).is_file())
    said = ", ".join(files[:5]) or "no file (nothing the runs did downloads or writes there)"
    report.check(
        runner, set(written) == {uid}, f"the HF cache mount and all in it owned by uid {uid}: {said}",
        f"the HF cache mount after the online run: files {files[:5]}, owners {sorted(written)}",
    )  # fmt: skip


def uid_of_containers() -> int:
    """The uid the containers run as, which must own what they write."""
    return int(docker.container_user().split(":")[0])
