"""Tonight's nightly, resolved once per run: a build that follows the nightly
(`TORCH_NIGHTLY_DATE: newest` in matrix.yaml, or a date) becomes, before any image is built,
a build of exact wheels by URL + sha256 (containers/nightly_pin.py resolve), so the image tag,
every `docker build` and every shard and GPU of the run install the same wheels. The workflow's
plan step resolves once and hands the answer to every job (SUITE_NIGHTLY_RESOLVED); a session
started by hand resolves itself. The run folder's manifest.json records what was resolved.

Host side, standard library only (nox imports it).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

from suite.errors import UsageError
from suite.sessions import push
from suite.spec.model import BuildSpec, Matrix

DATE_ARG = "TORCH_NIGHTLY_DATE"
INDEX_ENV = "SUITE_NIGHTLY_INDEX"  # a mirror of the nightly index (the tests' local one)
RESOLVED_ENV = "SUITE_NIGHTLY_RESOLVED"  # JSON {build: resolve's object}: the plan step's answer
MANIFEST = "manifest.json"
KEYS = ("date", "torch", "torch_url", "torch_sha256", "torchvision", "torchvision_url", "torchvision_sha256")


def follows(build: BuildSpec) -> bool:
    """A nightly build whose wheels come from resolving a date (not fixed URLs)."""
    args = build.build_args
    return build.kind == "nightly" and DATE_ARG in args and "TORCH_WHEEL_URL" not in args


def default_builds(matrix: Matrix) -> list[str]:
    """bench-nightly's default: the builds that follow the nightly (else the guide's `nightly`)."""
    return [n for n, b in matrix.builds.items() if follows(b) and b.container] or ["nightly"]


def companions(matrix: Matrix, chosen: Sequence[BuildSpec]) -> list[BuildSpec]:
    """What the chosen builds are compared with, run first: a followed nightly its current
    release (`kind: release` with a container), the guide's nightly its stable build."""
    kinds = {"release" if follows(b) else "stable" for b in chosen if b.kind == "nightly"} or {"stable"}
    return [b for b in matrix.builds.values() if b.kind in kinds and b.container and b not in chosen]


def nightly_pin(root: Path) -> ModuleType:
    """containers/nightly_pin.py (a script the images run too), loaded from its file."""
    spec = importlib.util.spec_from_file_location("nightly_pin", root / "containers" / "nightly_pin.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("nightly_pin", module)
    spec.loader.exec_module(module)
    return module


def resolve(
    build: BuildSpec, root: Path, date: str = "", environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """resolve's object for one build: `date` (a flag), else the build's own date or newest."""
    env = os.environ if environ is None else environ
    pin = nightly_pin(root)
    index = env.get(INDEX_ENV, "") or build.index_url
    want = date or str(build.build_args.get(DATE_ARG) or "newest")
    try:
        return dict(pin.resolve(index, build.python, want, build.name))
    except pin.PinError as exc:
        raise UsageError(f"builds.{build.name}", str(exc)) from None


def handed(environ: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """The plan step's resolutions (SUITE_NIGHTLY_RESOLVED), checked."""
    text = environ.get(RESOLVED_ENV, "").strip()
    if not text:
        return {}
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(RESOLVED_ENV, f"not JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise UsageError(RESOLVED_ENV, "must be an object {build: resolved night}")
    for name, found in data.items():
        missing = [k for k in KEYS if not isinstance(found, dict) or not str(found.get(k, ""))]
        if missing:
            raise UsageError(f"{RESOLVED_ENV}: {name}", f"lacks {', '.join(missing)}")
    return data


def pinned(build: BuildSpec, found: Mapping[str, str]) -> BuildSpec:
    """The build as the night's exact wheels: its line, URLs, hashes, date and commit."""
    if not all(re.fullmatch(r"[0-9a-f]{64}", found[k]) for k in ("torch_sha256", "torchvision_sha256")):
        raise UsageError(f"builds.{build.name}", "the resolved night has no sha256 for its wheels")
    args = {
        **build.build_args,
        DATE_ARG: found["date"],
        "TORCH_WHEEL_URL": found["torch_url"],
        "TORCH_WHEEL_SHA256": found["torch_sha256"],
        "TORCHVISION_WHEEL_URL": found["torchvision_url"],
        "TORCHVISION_WHEEL_SHA256": found["torchvision_sha256"],
    }
    if found.get("git_sha"):
        args["TORCH_GIT_SHA"] = found["git_sha"]
    line = found["torch"].split(".dev")[0].split("+")[0]
    return replace(build, torch=line, index_url=found.get("index") or build.index_url, build_args=args)


def resolve_all(
    chosen: Sequence[BuildSpec],
    root: Path,
    date: str = "",
    environ: Mapping[str, str] | None = None,
    run_dir: Path | None = None,
) -> tuple[list[BuildSpec], dict[str, dict[str, str]]]:
    """Every build that follows the nightly, resolved once (or as the plan step handed it). A
    run folder whose manifest already names a build's night (an earlier session of this run id:
    a re-run, a resume) keeps that night: the index is not asked again, and a different night
    handed or asked for is refused in one line (a new night needs a new run id)."""
    env = os.environ if environ is None else environ
    given = handed(env)
    kept = kept_nights(run_dir) if run_dir is not None else {}
    out: list[BuildSpec] = []
    found: dict[str, dict[str, str]] = {}
    for build in chosen:
        if not follows(build):
            out.append(build)
            continue
        if build.name in kept:
            found[build.name] = same_night(build.name, kept[build.name], given.get(build.name), date, run_dir)
        else:
            found[build.name] = given.get(build.name) or resolve(build, root, date, env)
        out.append(pinned(build, found[build.name]))
    return out, found


def kept_nights(run_dir: Path) -> dict[str, dict[str, str]]:
    """What the run folder's manifest.json says each followed build resolved to ({} when none);
    an unreadable manifest is one line, never a night guessed anew."""
    path = run_dir / MANIFEST
    if not path.is_file():
        return {}
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(str(path), f"unreadable ({exc}): the run's night cannot be kept") from None
    nights = data.get("nightly", {}) if isinstance(data, dict) else None
    if not isinstance(nights, dict):
        raise UsageError(f"{path}: nightly", "must be an object {build: resolved night}")
    for name, night in nights.items():
        missing = [k for k in KEYS if not isinstance(night, dict) or not str(night.get(k, ""))]
        if missing:
            raise UsageError(f"{path}: nightly.{name}", f"lacks {', '.join(missing)}")
    return nights


def same_night(
    name: str, kept: dict[str, str], given: Mapping[str, str] | None, date: str, run_dir: Path | None
) -> dict[str, str]:
    """The run's own night for `name`; a handed resolution or a --nightly-date of another night
    is refused: one run id, one night."""
    offered = [(RESOLVED_ENV, given["date"], given["torch_sha256"])] if given else []
    offered += [("--nightly-date", date, "")] if date and date != "newest" else []
    for where, night, sha in offered:
        if night != kept["date"] or (sha and sha != kept["torch_sha256"]):
            raise UsageError(
                where,
                f"run {run_dir.name if run_dir else '?'} measured {name} on the torch nightly of "
                f"{kept['date']} (its {MANIFEST}), not {night}: a new night needs a new run id",
            )
    return dict(kept)


def describe(name: str, found: Mapping[str, str]) -> str:
    git = found.get("git_sha", "")[:12] or "unknown until installed"
    return (
        f"{name}: the torch nightly of {found['date']}: torch {found['torch']} (sha256 "
        f"{found['torch_sha256'][:12]}), torchvision {found['torchvision']}, "
        f"{found.get('triton') or 'triton as installed'}, git {git}"
    )


def write_manifest(run_dir: Path, found: Mapping[str, Mapping[str, str]]) -> Path | None:
    """run_dir/manifest.json's `nightly` entry: what each followed build resolved to (kept
    across the sessions of a run: a resumed one adds, never drops)."""
    if not found:
        return None
    path = run_dir / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, json.JSONDecodeError):
        data = {}
    data = data if isinstance(data, dict) else {}
    data.setdefault("nightly", {}).update({k: dict(v) for k, v in found.items()})
    run_dir.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    push.hand_over(path)
    return path
