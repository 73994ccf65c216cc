"""The nightly history's default home: Parquet files committed to a branch of this repository.

    python .github/scripts/history_branch.py pull CHECKOUT          # the branch's store into CHECKOUT
    python .github/scripts/history_branch.py push CHECKOUT MESSAGE  # what changed, committed and pushed

With no BENCH_HISTORY_URL, the workflows keep the history store (suite.history's Parquet store,
the folder `history/` of the checkout) on the branch HISTORY_BRANCH (default `bench-history`) of
the repository itself: it needs no bucket and no credentials beyond the job's own token, GitHub
never evicts it, and its log is the store's log (one commit a night, one per confirmation). The
Actions cache keeps the checkout between runs only to make the fetch small and to keep the
change points' cache (`_change_points.parquet`, ignored by the branch): the branch is the store,
and a run whose cache is gone pulls the whole history from it.

`pull` makes CHECKOUT the branch's newest commit: an existing checkout (the cache's) is fetched and
reset to it, keeping its ignored files; none is cloned (shallow: the newest commit only); a branch
that does not exist yet (the first night) leaves an empty store, and a cached checkout whose branch
was deleted keeps its commits, which `push` puts back. `push` commits every change under CHECKOUT
(nothing: nothing pushed) and pushes it; when another writer (the confirm workflow) pushed first,
the commit is replayed on theirs and pushed again (they write other files: the store writes a
night's rows, a confirmation, each to files of its own).

The remote is HISTORY_REMOTE, else GITHUB_SERVER_URL/GITHUB_REPOSITORY; the token (GH_TOKEN) goes
to git through its environment (GIT_CONFIG_*), never on a command line or into .git/config.
Standard library and the git CLI only. Errors are one `::error::` line and exit status 1.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

DEFAULT_BRANCH = "bench-history"
STORE = "history"  # the store's folder in the checkout (a Parquet store: suite.history.parquetstore)
IGNORED = ("history/_change_points.parquet", ".*.tmp", "**/.*.tmp")  # a cache, and a write's scratch
AUTHOR = ("github-actions[bot]", "41898282+github-actions[bot]@users.noreply.github.com")
PUSH_TRIES = 3
README = """# The nightly benchmark's history

Written by `.github/workflows/bench-nightly.yml` (one commit a night) and
`history-confirm.yml` (a confirmation): the Parquet store of `python -m suite history`
in `history/` (docs/history.md). Read it with

    git clone --branch {branch} --depth 1 <this repository> bench-history
    nox -s history -- report --store bench-history/history

Do not edit by hand: the store checks its own files.
"""


class Failed(RuntimeError):
    """One line for the job's log."""


@dataclass(frozen=True)
class Remote:
    """Where the branch lives and how git is let in."""

    url: str
    branch: str
    token: str = ""

    @staticmethod
    def of(environ: Mapping[str, str]) -> Remote:
        url = environ.get("HISTORY_REMOTE", "").strip()
        if not url:
            server, repo = environ.get("GITHUB_SERVER_URL", ""), environ.get("GITHUB_REPOSITORY", "")
            if not (server and repo):
                raise Failed(
                    "no HISTORY_REMOTE, and no GITHUB_SERVER_URL/GITHUB_REPOSITORY: where is the branch?"
                )
            url = f"{server.rstrip('/')}/{repo}.git"
        branch = environ.get("HISTORY_BRANCH", "").strip() or DEFAULT_BRANCH
        return Remote(url, branch, environ.get("GH_TOKEN", ""))

    def environ(self) -> dict[str, str]:
        """git's environment: the token as an HTTP header given through GIT_CONFIG_* (as
        actions/checkout gives it, but never written to .git/config), no prompt."""
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
        if self.token:
            basic = base64.b64encode(f"x-access-token:{self.token}".encode()).decode()
            env.update(
                {
                    "GIT_CONFIG_COUNT": "1",
                    "GIT_CONFIG_KEY_0": "http.extraheader",
                    "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
                }
            )
        return env


def git(checkout: Path, remote: Remote, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        ["git", "-C", str(checkout), *args], capture_output=True, text=True, env=remote.environ(), check=False
    )
    if check and proc.returncode != 0:
        said = (proc.stderr.strip() or proc.stdout.strip() or "(no output)").splitlines()[-1]
        raise Failed(f"git {' '.join(args[:2])}: {said}")
    return proc


def branch_exists(checkout: Path, remote: Remote) -> bool:
    heads = git(checkout, remote, "ls-remote", "--heads", "origin", remote.branch).stdout
    return bool(heads.strip())


def has_commit(checkout: Path, remote: Remote) -> bool:
    return git(checkout, remote, "rev-parse", "--verify", "--quiet", "HEAD", check=False).returncode == 0


def pull(checkout: Path, remote: Remote) -> str:
    """CHECKOUT as the branch's newest commit (or a new store); one line of what it holds."""
    fresh = not (checkout / ".git").is_dir()
    if fresh:
        checkout.mkdir(parents=True, exist_ok=True)
        git(checkout, remote, "init", "--quiet", "--initial-branch", remote.branch)
        git(checkout, remote, "remote", "add", "origin", remote.url)
    else:
        git(checkout, remote, "remote", "set-url", "origin", remote.url)
    if branch_exists(checkout, remote):
        git(checkout, remote, "fetch", "--quiet", "--depth", "1", "origin", remote.branch)
        git(checkout, remote, "checkout", "--quiet", "-B", remote.branch, "FETCH_HEAD")
        git(checkout, remote, "reset", "--quiet", "--hard", "FETCH_HEAD")
        git(checkout, remote, "clean", "--quiet", "-fd")  # untracked files go; ignored ones (a cache) stay
        head = git(checkout, remote, "rev-parse", "--short", "HEAD").stdout.strip()
        said = f"the branch {remote.branch} at {head}"
        how = "cloned" if fresh else "fetched into the cached checkout"
    elif has_commit(checkout, remote):
        said, how = (
            f"the cached checkout's commits (the branch {remote.branch} is gone: push puts it back)",
            "kept",
        )
    else:
        said, how = f"no branch {remote.branch} yet: a new, empty history", "started"
    (checkout / STORE).mkdir(exist_ok=True)
    nights = len(list((checkout / STORE / "rows").glob("**/*.parquet")))
    return f"{how}: {said}; {nights} night file(s) in {checkout / STORE}"


def commit(checkout: Path, remote: Remote, message: str) -> bool:
    """Every change under CHECKOUT in one commit; False when nothing changed."""
    (checkout / ".gitignore").write_text("".join(f"{p}\n" for p in IGNORED), encoding="utf-8")
    readme = checkout / "README.md"
    if not readme.exists():
        readme.write_text(README.format(branch=remote.branch), encoding="utf-8")
    git(checkout, remote, "add", "--all")
    if git(checkout, remote, "diff", "--cached", "--quiet", check=False).returncode == 0:
        return False
    name, email = AUTHOR
    git(checkout, remote, "-c", f"user.name={name}", "-c", f"user.email={email}", "commit", "--quiet",
        "--message", message)  # fmt: skip
    return True


def replay(checkout: Path, remote: Remote) -> None:
    """Our one commit on top of what another writer pushed meanwhile (a conflict: one line)."""
    git(checkout, remote, "fetch", "--quiet", "--depth", "1", "origin", remote.branch)
    parent = git(checkout, remote, "rev-parse", "--verify", "--quiet", "HEAD~1", check=False)
    since = ["HEAD~1"] if parent.returncode == 0 else ["--root"]
    name, email = AUTHOR
    done = git(checkout, remote, "-c", f"user.name={name}", "-c", f"user.email={email}", "rebase",
               "--quiet", "--onto", "FETCH_HEAD", *since, check=False)  # fmt: skip
    if done.returncode != 0:
        git(checkout, remote, "rebase", "--abort", check=False)
        raise Failed(
            f"another writer changed the same files of the history on {remote.branch} meanwhile: "
            "this night is not pushed (run the job again: it pulls theirs first)"
        )


def push(checkout: Path, remote: Remote, message: str) -> str:
    if not (checkout / ".git").is_dir():
        raise Failed(f"{checkout}: no checkout of the history (pull first)")
    if not commit(checkout, remote, message):
        return f"nothing new in the history: nothing pushed to {remote.branch}"
    for attempt in range(1, PUSH_TRIES + 1):
        pushed = git(
            checkout, remote, "push", "--quiet", "origin", f"HEAD:refs/heads/{remote.branch}", check=False
        )
        if pushed.returncode == 0:
            head = git(checkout, remote, "rev-parse", "--short", "HEAD").stdout.strip()
            return f"pushed {head} to {remote.branch}" + (f" (try {attempt})" if attempt > 1 else "")
        if attempt < PUSH_TRIES:
            replay(checkout, remote)
    said = (pushed.stderr.strip() or "(no output)").splitlines()[-1]
    raise Failed(f"git push to {remote.branch} failed {PUSH_TRIES} times: {said}")


def main(argv: list[str]) -> int:
    try:
        if len(argv) == 2 and argv[0] == "pull":
            print(pull(Path(argv[1]), Remote.of(os.environ)))
        elif len(argv) == 3 and argv[0] == "push":
            print(push(Path(argv[1]), Remote.of(os.environ), argv[2]))
        else:
            print("usage: history_branch.py pull CHECKOUT | push CHECKOUT MESSAGE", file=sys.stderr)
            return 2
    except Failed as exc:
        print(f"::error::{exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
