"""The container sessions (`nox -s build`, `bench-stable`, `bench-nightly`): build the images
that are missing, probe the device, run the profile in each build's container, on the command
lines of suite.sessions.images and suite.sessions.docker. Every check that can fail on bad input or a
machine without Docker or a GPU runs before any benchmark starts, and says what is wrong in
one line. A docker command is checked for secrets before it is shown or run.
"""

from __future__ import annotations

import functools
import os
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.measure import machine
from suite.sessions import docker, fleet, floors, images, nightly, pergpu, push
from suite.sessions.images import Substitutes
from suite.sessions.posargs import BenchArgs, SelectionCheck, bench_args, merge_target, refuse_rest, take
from suite.sessions.runner import Runner, load, no_container, pick_builds
from suite.spec import BuildSpec, Matrix


def run_docker(
    cmd: list[str], runner: Runner | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """Run a docker command after checking that it holds no secret (suite.sessions.docker.refusal);
    given a runner, show the command first, only once it has passed that check."""
    refused = docker.refusal(cmd, os.environ)
    if refused:
        raise UsageError("", refused)
    if runner is not None:
        runner.log(" ".join(cmd))
    return subprocess.run(cmd, check=False, text=True, **kwargs)


@dataclass
class Build:
    """How the images are built: the substitutes, and whether to rebuild or skip the cache."""

    subs: Substitutes = field(default_factory=Substitutes)
    rebuild: bool = False
    no_cache: bool = False
    # what each build that follows the nightly resolved to (suite.sessions.nightly), and the
    # night asked for (--nightly-date; empty: each build's own, else the newest)
    resolved: dict[str, dict[str, str]] = field(default_factory=dict)
    nightly_date: str = ""


def check_local_bases(runner: Runner, matrix: Matrix, chosen: Sequence[BuildSpec], root: Path) -> None:
    """With --local-bases, each stand-in must be there: one line naming the script if not."""
    wanted = {images.substitute_args(b, root, Substitutes(local_bases=True))["BASE_IMAGE"] for b in chosen}
    for base in sorted(wanted):
        if run_docker(images.image_exists_command(base), capture_output=True).returncode != 0:
            kind = "ubuntu" if "ubuntu" in base else "python"
            raise UsageError(
                "--local-bases", f"no image {base}: make it with `sudo {images.LOCAL_BASES_SCRIPT} {kind}`"
            )
        runner.log(f"base image: {base} (containers/local-bases.sh's stand-in for the pinned one)")


def ensure_image(
    runner: Runner,
    matrix: Matrix,
    build: BuildSpec,
    root: Path,
    how: Build | None = None,
    offline: bool = False,
) -> str:
    """The build's image tag, built first if missing (or if asked to)."""
    how = how or Build()
    if not build.container:
        raise no_container(matrix, build)
    if nightly.follows(build):  # a date not resolved yet (a bisect's): its wheels first
        build = nightly.pinned(build, nightly.resolve(build, root))
    lock = root / build.container / "requirements.txt"  # the image: containers/Dockerfile
    if not lock.is_file():
        raise UsageError(f"{matrix.path}: builds.{build.name}.container", f"{lock} does not exist")
    tag = images.image_tag(build, root, how.subs)
    exists = run_docker(images.image_exists_command(tag), capture_output=True).returncode == 0
    if exists and not how.rebuild:
        runner.log(f"{build.name}: image {tag} is there")
        return tag
    if offline:
        raise UsageError(
            build.name, f"image {tag} is not built and --offline forbids the network; build it first"
        )
    client = images.buildkit_client()
    ca = images.pip_ca()
    cmd = images.build_command(
        build, root, tag, how.subs, client, ca, images.provenance_args(root), how.no_cache
    )
    network = os.environ.get(images.BUILD_NETWORK_ENV, "").strip()
    if network:  # e.g. host: a mirror of the nightly index on this machine's loopback
        cmd[-1:-1] = ["--network", network]
    started = time.monotonic()
    if run_docker(cmd, runner, env={**os.environ, **images.BUILD_ENV}).returncode != 0:
        runner.error(f"{build.name}: docker build failed (its output is above)")
    runner.log(f"{build.name}: built {tag} in {time.monotonic() - started:.1f} s")
    return tag


def build_images(runner: Runner, posargs: Sequence[str], root: Path) -> None:
    """`nox -s build [-- --build B1,B2] [--rebuild] [--local-bases] [--torch-from-pypi]`: the
    images of the builds that have a container (or those named)."""
    args = list(posargs)
    flags = take(args, values=["--build", "--nightly-date", "--keep"], switches=["--rebuild"])
    how = Build(subs=images.pop_substitutes(args), rebuild=flags["--rebuild"])
    usage = "--build B1,B2, --rebuild, --nightly-date D, --keep N, --local-bases, --torch-from-pypi"
    refuse_rest(args, "build", usage)
    keep = images.keep_count(flags["--keep"])
    wanted = flags["--build"]
    matrix = load(root)
    chosen = pick_builds(matrix, wanted, [n for n, b in matrix.builds.items() if b.container])
    for spec in chosen:
        if not spec.container:
            raise UsageError(
                f"{matrix.path}: builds.{spec.name}", "no container to build (a local-only build)"
            )
        images.substitute_args(spec, root, how.subs)  # a substitute this build cannot take: one line now
    docker.check_docker()
    chosen, how.resolved = nightly.resolve_all(chosen, root, flags["--nightly-date"] or "")
    for name, found in how.resolved.items():
        runner.log(nightly.describe(name, found))
    if how.subs.local_bases:
        check_local_bases(runner, matrix, chosen, root)
    for spec in chosen:
        runner.log(f"{spec.name}: {ensure_image(runner, matrix, spec, root, how)}")
    if keep is not None:
        for line in images.prune(run_docker, [s.name for s in chosen], keep):
            runner.log(line)


def hf_cache_dir() -> Path:
    """The host's Hugging Face cache, shared with the containers (downloads happen once)."""
    home = os.environ.get("HF_HOME")
    return Path(home) if home else Path.home() / ".cache" / "huggingface"


def prepare_mounts(runner: Runner, opts: docker.RunOptions) -> None:
    """Create the run folder and the cache, write the HF token's file; as root, hand them to
    the image's user."""
    run_dir = opts.results / opts.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    if not opts.offline:
        opts.hf_cache.mkdir(parents=True, exist_ok=True)
    elif not opts.hf_cache.is_dir():
        raise UsageError(
            "--offline", f"no Hugging Face cache at {opts.hf_cache} (set HF_HOME to where the weights are)"
        )
    if os.getuid() == 0:
        uid = docker.IMAGE_UID
        runner.log(f"running as root: the containers run as uid {uid}, which gets {run_dir}")
        for path in [run_dir, *([] if opts.offline else [opts.hf_cache])]:
            for top, dirs, files in os.walk(path):
                for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
                    os.chown(name, uid, uid, follow_symlinks=False)
    if opts.token_file is not None:
        docker.write_token(opts.token_file, os.environ, docker.IMAGE_UID if os.getuid() == 0 else None)


def check_names_free(
    opts: docker.RunOptions, chosen: Sequence[BuildSpec], slots: Sequence[fleet.Slot] = ()
) -> None:
    """A container of the same name (this run id, build and shard) still there is a run in
    progress or a cancelled one's leftover: one line, instead of docker's conflict later."""
    listing = run_docker(
        ["docker", "container", "ls", "--all", "--format", "{{.Names}}"], capture_output=True
    )
    present = set(listing.stdout.split())
    shards = [s.shard for s in slots] or [opts.shard]
    for spec in chosen:
        names = [replace(opts, shard=shard).name(spec.name) for shard in shards]
        for name in [*names, replace(opts, shard=shards[0]).name(spec.name, "probe")]:
            if name in present:
                raise docker.DockerProblem(
                    f"a container named {name} is still there (this run id is running, or a cancelled "
                    f"run left it): remove it with `docker rm --force {name}`, or use another --run-id"
                )


def default_builds(matrix: Matrix, prefix: str) -> list[str]:
    """bench-stable: the stable builds that have a container; bench-nightly: the builds that
    follow tonight's nightly (suite.sessions.nightly)."""
    if prefix == "stable":
        return [n for n, b in matrix.builds.items() if b.kind == "stable" and b.container]
    return nightly.default_builds(matrix)


@dataclass
class Bench:
    """What a container session did: the run folder to merge (None: not to be merged), the
    image of each build, how long each step took (s), in order, and what could not run
    (one line each: a build this machine cannot run, a container that failed)."""

    merge: str | None
    tags: dict[str, str]
    seconds: dict[str, float]
    skipped: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    push: str = ""  # where the run was pushed (the merge pushes its tables there too)


@dataclass(frozen=True)
class Allow:
    """What the GPU preflight lets through: a GPU other processes use, a GPU in MIG mode."""

    busy: bool = False  # --allow-busy-gpu
    mig: bool = False  # --allow-mig


def machine_slots(
    runner: Runner, device: str, shard: str, containers: int, allow: Allow | None = None
) -> list[fleet.Slot]:
    """Where the containers run: one per GPU this session uses (read once from nvidia-smi,
    SUITE_GPUS choosing; a busy or MIG one refused in one line each, unless `allow`ed), or on
    the CPU one (`--containers N`: N, each on its share of the CPUs)."""
    if device == "cpu":
        return fleet.cpu_slots(containers, shard, sorted(os.sched_getaffinity(0)))
    if containers != 1:
        raise UsageError("--containers", "is for --device cpu; on GPUs, each GPU gets one (SUITE_GPUS)")
    detail = docker.no_nvidia_gpu()
    gpus, why = machine.query() if detail is None else ([], detail)
    if not gpus:
        raise docker.DockerProblem(
            f"no NVIDIA GPU found ({why or 'nvidia-smi lists none'}): the containers need a GPU and its "
            "driver; on this machine run `nox -s bench-local` (CPU)"
        )
    chosen = fleet.choose(gpus, os.environ)
    allow = allow or Allow()
    chosen, said = fleet.refused(chosen, machine.compute_apps(), allow.busy, allow.mig)
    for line in said:
        runner.log(f"refused: {line}")
    if not chosen:
        raise UsageError("GPU", said[0] if len(said) == 1 else f"every GPU refused: {'; '.join(said)}")
    affinity = fleet.topology() if len(gpus) > 1 else {}
    found = fleet.slots(chosen, shard, os.environ, affinity)
    if len(found) > 1:
        pins = ", ".join(f"{s.name} cpus {s.cpus or 'any'}" for s in found)
        runner.log(f"{len(found)} GPUs ({chosen[0].name}): one container each, in parallel ({pins})")
    return found


def slot_options(opts: docker.RunOptions, slot: fleet.Slot) -> docker.RunOptions:
    return replace(
        opts,
        gpu=slot.gpus_arg if opts.device == "cuda" else "",
        shard=slot.shard,
        cpus=slot.cpus,
        mems=slot.mems,
        gpu_state=slot.gpu.to_json() if slot.gpu is not None else "",
    )


def image_id(tag: str) -> str:
    """The image's ID as Docker reports it (empty if it cannot tell)."""
    proc = run_docker(images.image_exists_command(tag), capture_output=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""


def bench_containers(
    runner: Runner,
    posargs: Sequence[str],
    root: Path,
    prefix: str,
    check: SelectionCheck,
    hf_cache: Path | None = None,
    verb: pergpu.SuiteVerb | None = None,
) -> Bench:
    """Preflight every build against this machine's driver and GPUs, build the images of those
    that can run, probe each, then run each build's containers, one per GPU in parallel; the
    cells of a build that cannot run, and those a failed container never reached, become
    rows that say why (`verb` runs `suite mark` for them)."""
    args = list(posargs)
    flags = take(
        args,
        values=["--containers", "--push", "--push-every", "--nightly-date"],
        switches=["--allow-busy-gpu", "--allow-mig", "--new"],
    )
    how = Build(subs=images.pop_substitutes(args), nightly_date=flags["--nightly-date"] or "")
    allow = Allow(busy=flags["--allow-busy-gpu"], mig=flags["--allow-mig"])
    containers = flags["--containers"] or "1"
    if not containers.isdigit():
        raise UsageError("--containers", f"{containers!r} is not a whole number")
    target = push.target_of(flags["--push"], flags["--push-every"], os.environ)
    bench = resumed(runner, bench_args(args, prefix, root), flags["--new"])
    matrix = load(root)
    chosen = pick_builds(matrix, bench.builds, default_builds(matrix, prefix))
    # bench-nightly compares tonight's nightly with the current release (the guide's nightly with
    # the stable build), so it also runs whatever cells of those are missing from this run (the
    # runner skips the cells already recorded).
    if prefix == "nightly":
        chosen = nightly.companions(matrix, chosen) + chosen
    if any(a == "--matrix" or a.startswith("--matrix=") for a in bench.suite_args):
        raise UsageError(
            "--matrix", "the containers read the matrix.yaml built into their image; edit matrix.yaml"
        )
    device = bench.device or "cuda"
    bench = replace(bench, device=device)  # the cells of the device the containers use
    for spec in chosen:
        if not spec.container:
            raise no_container(matrix, spec)
        check(spec, bench)
        images.substitute_args(spec, root, how.subs)  # a substitute this build cannot take: one line
    slots = machine_slots(runner, device, bench.shard, int(containers), allow)
    opts = docker.run_options(
        bench.out, bench.run_id, (hf_cache or hf_cache_dir()).resolve(), bench.offline, device, bench.shard
    )
    try:
        session = _Session(runner, root, matrix, bench, how, slots, opts, verb)
        run = functools.partial(_bench, session, chosen)
        return pushed(runner, bench, target, run)
    finally:
        docker.remove_token(opts.token_file)


def pushed(runner: Runner, bench: BenchArgs, target: push.Target | None, run: Callable[[], Bench]) -> Bench:
    """`run` (the session's containers) with its run folder pushed every N rows and at the end,
    then marked finished: a session refused on the way is finished too (nothing to resume); one
    killed (a preempted VM, Ctrl-C) leaves it `running` for the next session to resume."""
    run_dir = bench.out / bench.run_id
    watcher = push.Watcher(run_dir, target, runner.log) if target is not None else None
    try:
        if watcher is not None:
            watcher.start()
        done = run()
    except (UsageError, docker.DockerProblem, SystemExit):
        if (run_dir / push.MARKER).is_file():
            push.mark(run_dir, bench.session, "finished")
        raise
    finally:
        if watcher is not None and run_dir.is_dir():
            watcher.stop()  # the CSVs as they are now; the merge pushes its tables too
    push.mark(run_dir, bench.session, "finished")
    done.push = target.url if target is not None else ""
    return done


def resumed(runner: Runner, bench: BenchArgs, new: bool) -> BenchArgs:
    """Without --run-id, the newest run of this session that never ended (a killed VM's), so
    its cells are not run twice; said in one line. `--new` starts another."""
    if bench.run_id_given or new:
        return bench
    old = push.unfinished(bench.out, bench.session)
    if old is None:
        return bench
    runner.log(
        f"resuming {old}: the newest run in {bench.out} that `nox -s bench-{bench.session}` began and "
        "never finished (--new starts another, --run-id names one)"
    )
    return replace(bench, run_id=old, run_id_given=True)


@dataclass
class _Session:
    """One bench session's shared parts, and its steps in order: preflight, tonight's nightly,
    the command lines checked, the host checked, the images, the probes, the runs."""

    runner: Runner
    root: Path
    matrix: Matrix
    bench: BenchArgs
    how: Build
    slots: Sequence[fleet.Slot]
    opts: docker.RunOptions
    verb: pergpu.SuiteVerb | None
    verdicts: dict[str, floors.Verdict] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    commands: dict[str, list[str]] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    done: Bench = field(default_factory=lambda: Bench(merge=None, tags={}, seconds={}))

    def mark(self, spec: BuildSpec, m: pergpu.Mark, count: bool = False) -> int:
        if self.verb is None:
            return 0
        bench = self.bench
        cmd = pergpu.mark_args(spec, bench.run_id, str(bench.out), self.opts.device, bench.suite_args, m)
        said = self.verb([*cmd, "--count"] if count else cmd)
        return int(said.strip().splitlines()[-1]) if said.strip() else 0

    def preflight(self, chosen: Sequence[BuildSpec]) -> None:
        """Each build's needs against the driver and GPU, before anything is built; a build that
        can run only eager and has no eager cell in this session cannot run at all."""
        gpu = self.slots[0].gpu
        for spec in chosen:
            subs = self.how.subs
            self.verdicts[spec.name] = (
                floors.check(spec, gpu, subs.torch_from_pypi) if gpu is not None else floors.Verdict("all")
            )
        for spec in chosen:
            verdict = self.verdicts[spec.name]
            if verdict.runs != "eager" or self.verb is None:
                continue
            whole = replace(self.slots[0], shard=self.bench.shard)  # the session's cells, not one GPU's part
            if self.mark(spec, pergpu.Mark("skipped", verdict.reason, whole, only="eager"), count=True) == 0:
                self.verdicts[spec.name] = floors.Verdict("none", verdict.reason)

    def resolve(self, chosen: Sequence[BuildSpec]) -> list[BuildSpec]:
        """Tonight's nightly, once for the whole session (every GPU's container runs the same
        image), for the builds this machine can run."""
        can = [s for s in chosen if self.verdicts[s.name].runs != "none"]
        resolved, self.how.resolved = nightly.resolve_all(can, self.root, self.how.nightly_date)
        by_name = {s.name: s for s in resolved}
        for name, found in self.how.resolved.items():
            self.runner.log(nightly.describe(name, found))
        return [by_name.get(s.name, s) for s in chosen]

    def command_lines(self, chosen: Sequence[BuildSpec]) -> None:
        """Every container's command line, checked for secrets before anything runs or is shown."""
        for spec in chosen:
            if self.verdicts[spec.name].runs == "none":
                continue
            self.tags[spec.name] = images.image_tag(spec, self.root, self.how.subs)
            probe_opts = slot_options(self.opts, self.slots[0])
            self.commands[spec.name] = docker.probe_command(spec, probe_opts, self.tags[spec.name])
        runs = _all_run_commands(chosen, self.tags, self.slots, self.opts, self.bench, self.verdicts)
        for cmd in [*self.commands.values(), *runs]:
            refused = docker.refusal(cmd, os.environ)
            if refused:
                raise UsageError("", refused)

    def check_host(self, chosen: Sequence[BuildSpec]) -> None:
        """Docker (and the GPU), the stand-in bases, the container names and mounts; the run
        folder marked running and tonight's manifest written."""
        opts, runner = self.opts, self.runner
        docker.check_docker()
        if opts.device == "cuda":
            docker.check_gpu()
        tagged = [s for s in chosen if s.name in self.tags]
        if self.how.subs.local_bases:
            check_local_bases(runner, self.matrix, tagged, self.root)
        check_names_free(opts, tagged, self.slots)
        prepare_mounts(runner, opts)
        push.mark(opts.results / opts.run_id, self.bench.session, "running")  # finished when the session ends
        manifest = nightly.write_manifest(opts.results / opts.run_id, self.how.resolved)
        if manifest is not None:
            runner.log(f"what tonight's nightly resolved to: {manifest}")

    def cannot_run(self, spec: BuildSpec, reason: str) -> None:
        self.runner.log(f"warning: {spec.name} cannot run here: {reason}")
        self.done.skipped.append(f"{spec.name}: {reason}")
        for slot in self.slots:
            self.mark(spec, pergpu.Mark("skipped", reason, slot))

    def build_images(self, chosen: Sequence[BuildSpec]) -> None:
        done = self.done
        for spec in chosen:
            if spec.name not in self.tags:
                continue
            started = time.monotonic()
            done.tags[spec.name] = ensure_image(
                self.runner, self.matrix, spec, self.root, self.how, offline=self.bench.offline
            )
            self.ids[spec.name] = image_id(done.tags[spec.name])
            done.seconds[f"{spec.name} image"] = time.monotonic() - started

    def probe(self, chosen: Sequence[BuildSpec]) -> list[BuildSpec]:
        """The builds whose probe container passed; the others told and marked skipped."""
        runnable = []
        for spec in chosen:
            if spec.name not in self.tags:
                continue
            started = time.monotonic()
            probe = run_docker(self.commands[spec.name], capture_output=True)
            self.done.seconds[f"{spec.name} probe"] = time.monotonic() - started
            if probe.returncode != 0:
                self.cannot_run(spec, docker.explain_probe_failure(probe, self.tags[spec.name]))
                continue
            self.runner.log(f"{spec.name}: {probe.stdout.strip() or 'probe passed'}")
            runnable.append(spec)
        if not runnable:
            skipped = self.done.skipped
            raise docker.DockerProblem(skipped[0].split(": ", 1)[1] if skipped else "nothing to run")
        return runnable

    def jobs(self, runnable: Sequence[BuildSpec]) -> list[pergpu.Job]:
        jobs = []
        for slot in self.slots:
            for spec in runnable:
                tag, image, verdict = self.tags[spec.name], self.ids[spec.name], self.verdicts[spec.name]
                cmd = _run_command(spec, slot, tag, self.opts, self.bench, verdict, image)
                eager = verdict.reason if verdict.runs == "eager" else ""
                jobs.append(pergpu.Job(spec, slot, cmd, tag, image, eager))
        return jobs

    def settle(self, outcome: pergpu.Outcome) -> bool:
        """One container's end: its seconds, and its cells marked if it failed or ran eager only.
        True: the suite refused its input (its one-line usage error is above)."""
        job = outcome.job
        key = f"{job.build.name} run" + (f" {job.slot.name}" if len(self.slots) > 1 else "")
        self.done.seconds[key] = outcome.seconds
        image = {"image_tag": job.tag, "image_id": job.image_id}
        if outcome.code not in (0, 2):
            why = f"the container on {job.slot.name} exited with {pergpu.describe_status(outcome.code)}"
            self.done.failed.append(f"{job.build.name}: {why}")
            only = "eager" if job.eager_reason else "all"
            self.mark(job.build, pergpu.Mark("error", f"{why} before this cell ran", job.slot, only, **image))
        if job.eager_reason and outcome.code != 2:
            self.mark(job.build, pergpu.Mark("skipped", job.eager_reason, job.slot, "compiled", **image))
        return outcome.code == 2


def _bench(session: _Session, chosen: Sequence[BuildSpec]) -> Bench:
    session.preflight(chosen)
    chosen = session.resolve(chosen)
    session.command_lines(chosen)
    session.check_host(chosen)
    for spec in chosen:
        if session.verdicts[spec.name].runs == "none":
            session.cannot_run(spec, session.verdicts[spec.name].reason)
    session.build_images(chosen)
    runnable = session.probe(chosen)
    outcomes = pergpu.Pipelines(session.runner.log).run(session.jobs(runnable))
    usage = [session.settle(outcome) for outcome in outcomes]
    if any(usage):
        raise SystemExit(2)
    session.done.merge = merge_target(session.runner, session.bench)
    return session.done


def _run_command(
    spec: BuildSpec,
    slot: fleet.Slot,
    tag: str,
    opts: docker.RunOptions,
    bench: BenchArgs,
    verdict: floors.Verdict,
    image: str = "",
) -> list[str]:
    """`docker run ... suite run` of one build on one slot: its shard, its GPU, its CPUs."""
    args = pergpu.with_flag(bench.suite_args, "--shard", slot.shard or None)
    if verdict.runs == "eager":
        args = pergpu.eager_only(args)
    return docker.suite_run_command(spec, slot_options(opts, slot), tag, args, image)


def _all_run_commands(
    chosen: Sequence[BuildSpec],
    tags: dict[str, str],
    slots: Sequence[fleet.Slot],
    opts: docker.RunOptions,
    bench: BenchArgs,
    verdicts: dict[str, floors.Verdict],
) -> list[list[str]]:
    return [
        _run_command(spec, slot, tags[spec.name], opts, bench, verdicts[spec.name])
        for spec in chosen
        if spec.name in tags
        for slot in slots
    ]
