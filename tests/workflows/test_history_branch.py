"""The nightly history kept on a branch of the repository (.github/scripts/history_branch.py):
a fake GitHub whose repository is a bare git repository on disk. A night is ingested and pushed;
the Actions cache is then gone (a fresh runner, an evicted cache) and the next night still finds
the history, is judged against the night before, and is pushed on top; a second writer (the
confirm workflow) that pushed meanwhile is kept."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.history import nightly_history

from suite.cli import main
from suite.history.store import open_store
from suite.history.verdict import verdict

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / ".github" / "scripts"))
history_branch = importlib.import_module("history_branch")


@pytest.fixture
def github(tmp_path: Path) -> history_branch.Remote:
    """The repository's remote: a bare repository with a main branch and no history branch."""
    bare = tmp_path / "repo.git"
    subprocess.run(["git", "init", "--quiet", "--bare", str(bare)], check=True)
    return history_branch.Remote(str(bare), "bench-history")


def nights_in(store: Path) -> set[str]:
    con = open_store(store).connect()
    try:
        return {r[0] for r in con.execute("SELECT DISTINCT run_id FROM history").fetchall()}
    finally:
        con.close()


def test_a_night_restores_the_history_after_the_cache_is_gone(
    github: history_branch.Remote, tmp_path: Path
) -> None:
    runs = nightly_history(3, 99, seed=1).write(tmp_path / "runs")
    cached = tmp_path / "runner-1" / "results" / "history-branch"
    said = history_branch.pull(cached, github)
    assert said.startswith("started: no branch bench-history yet") and said.endswith(
        "0 night file(s) in " + str(cached / "history")
    )
    store = cached / history_branch.STORE
    assert main(["history", "ingest", str(runs[0]), "--store", str(store)]) == 0
    assert history_branch.push(cached, github, "history: night 1").startswith("pushed ")
    listed = subprocess.run(["git", "-C", github.url, "ls-tree", "-r", "--name-only", "bench-history"],
                            capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert "history/_history.json" in listed and ".gitignore" in listed and "README.md" in listed
    assert sum(name.endswith(".parquet") for name in listed) == 2  # stable and the nightly, one night

    # the cache is gone: a fresh runner pulls the whole history from the branch alone
    shutil.rmtree(tmp_path / "runner-1")
    fresh = tmp_path / "runner-2" / "results" / "history-branch"
    assert history_branch.pull(fresh, github).startswith("cloned: the branch bench-history at ")
    assert nights_in(fresh / "history") == {runs[0].name}
    assert main(["history", "ingest", str(runs[1]), "--store", str(fresh / "history")]) == 0
    judged = verdict(runs[1], fresh / "history")
    assert {v.previous.split(" ")[0] for v in judged.nights} == {runs[0].name}  # the night before, restored
    assert (
        "history/_change_points.parquet\n" in (fresh / ".gitignore").read_text()
    )  # a cache: never committed
    assert history_branch.push(fresh, github, "history: night 2").startswith("pushed ")

    # nothing new: nothing pushed; a third runner sees both nights
    assert history_branch.push(fresh, github, "history: again").startswith("nothing new")
    third = tmp_path / "runner-3" / "history-branch"
    history_branch.pull(third, github)
    assert nights_in(third / "history") == {runs[0].name, runs[1].name}


def test_a_writer_that_pushed_meanwhile_is_kept_and_a_cached_checkout_only_fetches(
    github: history_branch.Remote, tmp_path: Path
) -> None:
    runs = nightly_history(3, 99, seed=2).write(tmp_path / "runs")
    first = tmp_path / "merge" / "history-branch"
    history_branch.pull(first, github)
    assert main(["history", "ingest", str(runs[0]), "--store", str(first / "history")]) == 0
    history_branch.push(first, github, "history: night 1")
    # the confirm job pulls, the next night's merge job (its cached checkout) pulls too ...
    confirm = tmp_path / "confirm" / "history-branch"
    history_branch.pull(confirm, github)
    assert history_branch.pull(first, github).startswith("fetched into the cached checkout: ")
    # ... the confirmation lands first, then the night, on top of it
    open_store(confirm / "history").keep_confirmation_record("change-1", '{"verdict": "agrees"}')
    assert history_branch.push(confirm, github, "history: a confirmation").startswith("pushed ")
    assert main(["history", "ingest", str(runs[1]), "--store", str(first / "history")]) == 0
    assert history_branch.push(first, github, "history: night 2").endswith("(try 2)")
    check = tmp_path / "check" / "history-branch"
    history_branch.pull(check, github)
    assert nights_in(check / "history") == {runs[0].name, runs[1].name}
    assert open_store(check / "history")._confirmations() == {"change-1": '{"verdict": "agrees"}'}
    log = subprocess.run(["git", "-C", github.url, "log", "--format=%s", "bench-history"],
                         capture_output=True, text=True, check=True).stdout.splitlines()  # fmt: skip
    assert log == ["history: night 2", "history: a confirmation", "history: night 1"]


def test_the_token_reaches_git_through_its_environment_only() -> None:
    remote = history_branch.Remote.of(
        {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r", "GH_TOKEN": "t0ken"}
    )
    assert (remote.url, remote.branch) == ("https://github.com/o/r.git", "bench-history")
    env = remote.environ()
    assert env["GIT_CONFIG_KEY_0"] == "http.extraheader"
    assert env["GIT_CONFIG_VALUE_0"] == "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46dDBrZW4="
    assert "t0ken" not in remote.url
    with pytest.raises(history_branch.Failed, match="where is the branch"):
        history_branch.Remote.of({})
    assert history_branch.Remote.of({"HISTORY_REMOTE": "/r.git", "HISTORY_BRANCH": "h"}).branch == "h"
