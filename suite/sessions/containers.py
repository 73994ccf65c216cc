"""The container sessions `bench-stable` and `bench-nightly`: every build checked against the
driver and GPU, the images built where missing (suite.sessions.imagebuild), each build's probe,
then its containers run, one per GPU in parallel (suite.sessions.host: the slots, mounts and
names), on the command lines of suite.sessions.docker. Every check that can fail on bad input or
a machine without Docker or a GPU runs before any benchmark starts, and says what is wrong in
one line. A docker command is checked for secrets before it is shown or run.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from suite.errors import UsageError
from suite.sessions import docker, fleet, floors, images, nightly, pairing, pergpu, push
from suite.sessions.host import (
    Allow,
    check_names_free,
    hf_cache_dir,
    machine_slots,
    prepare_mounts,
    run_docker,
    slot_options,
)
from suite.sessions.imagebuild import Build, check_local_bases, ensure_image, image_id
from suite.sessions.posargs import BenchArgs, SelectionCheck, bench_args, merge_target, take
from suite.sessions.runner import Runner, load, no_container, pick_builds
from suite.spec import BuildSpec, Matrix


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
        image), for the builds this machine can run; a run folder that has a night already (a
        re-run, a resume) keeps it."""
        can = [s for s in chosen if self.verdicts[s.name].runs != "none"]
        run_dir = self.opts.results / self.opts.run_id
        resolved, self.how.resolved = nightly.resolve_all(
            can, self.root, self.how.nightly_date, run_dir=run_dir
        )
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
        """Each build's container on each slot; the two builds of a pair (suite.sessions.pairing)
        told where their slot's coordinator listens, as the container sees the run folder."""
        pair, why = pairing.plan(runnable, self.bench.separate)
        if pair is None and len(runnable) > 1:
            self.runner.log(f"builds timed apart: {why}")
        inside = Path(docker.RESULTS_IN_CONTAINER) / self.bench.run_id
        jobs = []
        for slot in self.slots:
            for spec in runnable:
                tag, image, verdict = self.tags[spec.name], self.ids[spec.name], self.verdicts[spec.name]
                cmd = _run_command(spec, slot, tag, self.opts, self.bench, verdict, image)
                eager = verdict.reason if verdict.runs == "eager" else ""
                role = pair.role(spec) if pair is not None else ""
                if role:
                    cmd += pairing.runner_flags(pairing.socket_path(inside, slot.name), role)
                jobs.append(pergpu.Job(spec, slot, cmd, tag, image, eager, role))
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
    run_dir = session.opts.results / session.opts.run_id
    outcomes = pergpu.Pipelines(session.runner.log, run_dir).run(session.jobs(runnable))
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
