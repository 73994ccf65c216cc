"""Hash-locked requirement files (containers/<build>/requirements.txt): parse, prune, check.

The files are written by pip-compile (`nox -s lock -- BUILD`). torch and torchvision are
never in them: the Dockerfile installs the exact torch and torchvision wheels by URL and
sha256 (or a nightly's by date), and PyPI's torch metadata differs from the CUDA index's
(PyPI's 2.0.1 pulls nvidia-*-cu11 libraries that the cu118 wheel bundles). So `prune`
drops them and whatever only they needed.

`check` is what the tests run offline: every requirement pinned with `==` and hashed.
`closure_problems` is the network check (`nox -s lock -- --check`): the real wheels'
metadata, evaluated for the container's Python and platform, needs nothing the lock
lacks. Standard library only, except `closure_problems` (packaging).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")
HASH = re.compile(r"--hash=sha256:([0-9a-f]+)")
UNSAFE_HEADING = "# The following packages are considered to be unsafe in a requirements file"
# Installed from the build's own wheel or index, never from a lock file.
NOT_LOCKED = frozenset({"torch", "torchvision"})


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class Pin:
    """One `name==version` block of a lock file, with its hashes and its parents."""

    name: str
    version: str
    hashes: list[str] = field(default_factory=list)
    via: list[str] = field(default_factory=list)  # package names, or "-r <file>"
    lines: list[str] = field(default_factory=list)
    line_no: int = 0


@dataclass
class Lock:
    path: Path
    header: list[str]
    pins: list[Pin]
    stray: list[tuple[int, str]]  # lines that are neither a pin, a hash, nor a comment

    def names(self) -> set[str]:
        return {canonical(p.name) for p in self.pins}


def parse(path: Path) -> Lock:
    return parse_text(path.read_text(encoding="utf-8"), path)


def parse_text(text: str, path: Path) -> Lock:
    header: list[str] = []
    pins: list[Pin] = []
    stray: list[tuple[int, str]] = []
    in_via = False
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        match = PIN.match(raw)
        if match:
            pins.append(Pin(match.group(1), match.group(2), HASH.findall(raw), [], [raw], no))
            in_via = False
            continue
        if not pins:
            header.append(raw)
            continue
        current = pins[-1]
        if line.startswith("--hash="):
            current.hashes += HASH.findall(line)
            if not HASH.fullmatch(line.rstrip(" \\")):
                stray.append((no, raw))
        elif line.startswith("# via"):
            rest = line[len("# via") :].strip()
            in_via = not rest
            if rest:
                current.via.append(rest)
        elif in_via and line.startswith("#   "):
            current.via.append(line[1:].strip())
        elif line.startswith("#") or not line:
            in_via = False
        else:
            stray.append((no, raw))
        current.lines.append(raw)
    return Lock(path, header, pins, stray)


def check(lock: Lock) -> list[str]:
    """What is wrong with a lock file, one line each (empty: nothing)."""
    problems = [
        f"{lock.path}:{no}: not a pinned, hashed requirement: {text.strip()}" for no, text in lock.stray
    ]
    if not lock.pins:
        problems.append(f"{lock.path}: no pinned requirement at all")
    seen: set[str] = set()
    for pin in lock.pins:
        where = f"{lock.path}:{pin.line_no}: {pin.name}"
        if canonical(pin.name) in seen:
            problems.append(f"{where}: pinned twice")
        seen.add(canonical(pin.name))
        if canonical(pin.name) in NOT_LOCKED:
            problems.append(f"{where}: comes from the build's wheel or index, not from the lock")
        if not pin.hashes:
            problems.append(f"{where}: no --hash")
        bad = [h for h in pin.hashes if len(h) != 64]
        if bad:
            problems.append(f"{where}: {bad[0]!r} is not a sha256")
    return problems


def prune(text: str, drop: Iterable[str] = NOT_LOCKED) -> tuple[str, list[str]]:
    """Remove `drop` and every package required only through removed ones; return the new
    text and the removed names. Packages asked for in the .in file (`-r ...`) stay."""
    tmp = parse_text(text, Path("<lock>"))
    removed = {canonical(d) for d in drop}
    changed = True
    while changed:
        changed = False
        for pin in tmp.pins:
            name = canonical(pin.name)
            if name in removed or not pin.via:
                continue
            direct = any(v.startswith("-") for v in pin.via)
            if not direct and all(canonical(v) in removed for v in pin.via):
                removed.add(name)
                changed = True
    keep = tmp.header[:]
    out_names: list[str] = []
    for pin in tmp.pins:
        if canonical(pin.name) in removed:
            out_names.append(pin.name)
            continue
        lines = list(pin.lines)
        lines = _drop_via(lines, removed)
        keep += lines
    # pip-compile's heading of the `--allow-unsafe` section (setuptools, ...), when everything
    # under it went (as setuptools does with torch), would head nothing
    while keep and (not keep[-1].strip() or keep[-1].startswith(UNSAFE_HEADING)):
        keep.pop()
    return "\n".join(keep).rstrip("\n") + "\n", out_names


def _drop_via(lines: list[str], removed: set[str]) -> list[str]:
    """Remove removed packages from a block's `# via` annotation."""
    out = []
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("#   ") and canonical(stripped[1:].strip()) in removed:
            continue
        if stripped.startswith("# via ") and canonical(stripped[len("# via ") :]) in removed:
            continue
        out.append(line)
    return out


def closure_problems(
    lock: Lock, wheels: Iterable[Path], python: str, allowed: Iterable[str] = ()
) -> list[str]:
    """Every Requires-Dist of the downloaded wheels (markers evaluated for CPython
    `python` on Linux x86_64, no extras) names a package that the lock pins at a
    matching version, or one in `allowed` (torch: installed from its own wheel)."""
    import zipfile

    from packaging.requirements import Requirement

    env = {
        "python_version": python,
        "python_full_version": python + ".0",
        "platform_system": "Linux",
        "platform_machine": "x86_64",
        "sys_platform": "linux",
        "os_name": "posix",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    versions = {canonical(p.name): p.version for p in lock.pins}
    ok_external = {canonical(a) for a in allowed}
    problems = []
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            text = zf.read(meta).decode("utf-8", "replace")
        for line in text.splitlines():
            if not line.startswith("Requires-Dist:"):
                continue
            req = Requirement(line.split(":", 1)[1].strip())
            if req.marker is not None and not req.marker.evaluate(env):
                continue
            name = canonical(req.name)
            if name in ok_external:
                continue
            if name not in versions:
                problems.append(f"{wheel.name} needs {req}, which the lock does not pin")
            elif not req.specifier.contains(versions[name], prereleases=True):
                problems.append(f"{wheel.name} needs {req}, but the lock pins {name}=={versions[name]}")
    return problems


# Linux x86_64 wheel tags an Ubuntu 22.04 / Debian 12 image (glibc 2.35 / 2.36) accepts.
PLATFORMS = (
    "manylinux1_x86_64",
    "manylinux2010_x86_64",
    "manylinux2014_x86_64",
    *(f"manylinux_2_{minor}_x86_64" for minor in (5, 12, 17, 24, 26, 27, 28, 31, 34, 35)),
)


def verify(folder: Path, python: str) -> list[str]:
    """Network check (PyPI): download every locked wheel for CPython `python` on Linux
    x86_64 with --require-hashes (pip verifies each hash against the real file), then
    check that their dependencies are all in the lock."""
    import os
    import subprocess
    import tempfile

    lock_path = folder / "requirements.txt"
    lock = parse(lock_path)
    problems = check(lock)
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes"]
        cmd += ["--only-binary=:all:", "--implementation", "cp", "--python-version", python, "--dest", tmp]
        cmd += [f"--platform={p}" for p in PLATFORMS]
        env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, PIP_FIND_LINKS="")
        proc = subprocess.run(
            [*cmd, "-r", str(lock_path)], env=env, capture_output=True, text=True, check=False
        )
        if proc.returncode != 0:
            tail = [ln for ln in proc.stderr.splitlines() if ln.strip()][-3:]
            return [*problems, f"{lock_path}: pip download failed: {' | '.join(tail)}"]
        wheels = sorted(Path(tmp).glob("*.whl"))
        if len(wheels) != len(lock.pins):
            problems.append(f"{lock_path}: {len(lock.pins)} pins but {len(wheels)} wheels downloaded")
        problems += closure_problems(lock, wheels, python, allowed=NOT_LOCKED)
    return problems


def main(argv: list[str]) -> int:
    """`locks.py prune FILE` (after pip-compile), `check FILE...` (offline), or
    `verify FOLDER PYTHON` (downloads from PyPI)."""
    if len(argv) == 2 and argv[0] == "prune":
        path = Path(argv[1])
        text, removed = prune(path.read_text(encoding="utf-8"))
        path.write_text(text, encoding="utf-8")
        if removed:
            print(f"{path}: pruned {', '.join(removed)} (torch and torchvision come from their own wheels)")
        return 0
    if len(argv) >= 2 and argv[0] in ("check", "verify"):
        if argv[0] == "check":
            problems = [p for f in argv[1:] for p in check(parse(Path(f)))]
        elif len(argv) == 3:
            problems = verify(Path(argv[1]), argv[2])
        else:
            problems = ["usage: locks.py verify FOLDER PYTHON"]
        for problem in problems:
            print(problem, file=sys.stderr)
        if not problems:
            print(f"{' '.join(argv[1:])}: ok")
        return 1 if problems else 0
    print("usage: locks.py prune FILE | check FILE... | verify FOLDER PYTHON", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
