"""Secrets never written: tokens planted in the environment must not appear in any file of a
run (CSV, superseded rows, cell logs, lock, merged tables) nor on the terminal nor in
`suite env`, even when a worker prints them, writes them to fd 2 and raises with them
(SUITE_FAULT=leak)."""

from __future__ import annotations

import io
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support import REPO, TINY, call, tiny_run_cmd

from suite import redact
from suite.errors import UsageError
from suite.results import read_rows
from suite.sessions import docker
from suite.spec.builds import DERIVED_BUILD_ARGS, read_build
from suite.spec.fields import Reader


def planted() -> dict[str, str]:
    """Fresh values, so a hit can only come from this test's environment."""
    return {
        "HF_TOKEN": f"hf_{secrets.token_hex(16)}",
        "HUGGING_FACE_HUB_TOKEN": f"hf_{secrets.token_hex(16)}",
        "MY_SERVICE_API_KEY": secrets.token_hex(20),
        "DB_SECRET": f"pw-{secrets.token_hex(12)}",
        "gh_token": f"ghp_{secrets.token_hex(18)}",  # any case
    }


def leaks(text: str | bytes, tokens: dict[str, str]) -> list[str]:
    """Names of the tokens found whole, or by their first or last 10 characters."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return [
        name for name, value in tokens.items() if value in text or value[:10] in text or value[-10:] in text
    ]


def test_planted_tokens_appear_in_no_output(tmp_path: Path) -> None:
    tokens = planted()
    env = dict(
        os.environ,
        **tokens,
        PYTHONPATH=str(REPO),
        SUITE_FAULT="leak:TinyViT",
        SUITE_IMAGE=f"registry.example/suite:{tokens['HF_TOKEN']}",  # provenance carries one too
    )
    out = tmp_path / "out"
    base = [sys.executable, "-m", "suite"]
    commands = {
        "run": tiny_run_cmd(out, "s", "--models", "TinyViT"),
        "env": [*base, "env"],
        "bad --image": [
            *base,
            "plan",
            "--matrix",
            str(TINY),
            "--image",
            f"/nonexistent/{tokens['DB_SECRET']}.jpg",
        ],
    }
    streams: dict[str, str] = {}
    for name, cmd in commands.items():
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600, check=False
        )
        assert proc.returncode == (2 if name == "bad --image" else 0), proc.stderr
        streams[f"{name} stdout"], streams[f"{name} stderr"] = proc.stdout, proc.stderr

    # the leaking worker did its job, and the redaction shows where
    (csv_path,) = (out / "s" / "raw").glob("*.csv")
    rows = {r["model"]: r for r in read_rows(csv_path).rows}
    assert rows["TinyViT"]["status"] == "error"
    assert "token <redacted:HF_TOKEN> rejected" in rows["TinyViT"]["error"]
    assert rows["TinyViT"]["image"] == "registry.example/suite:<redacted:HF_TOKEN>"
    (log,) = (out / "s" / "logs").rglob("000-tinyvit-*.log")
    log_text = log.read_text()
    for name in ("HF_TOKEN", "MY_SERVICE_API_KEY", "DB_SECRET", "gh_token"):
        assert f"<redacted:{name}>" in log_text, name  # from the printed environment
    assert "HF_TOKEN on fd 2: <redacted:HF_TOKEN>" in log_text  # C-level write, below Python
    assert "<redacted:HF_TOKEN>" in streams["run stderr"]  # the progress line's reason
    assert "<redacted:DB_SECRET>" in streams["bad --image stderr"]
    assert "registry.example/suite:<redacted:HF_TOKEN>" in streams["env stdout"]

    # a run that ends removes its lock file; a killed one leaves it (for the next runner to
    # take over): that file must hold no secret either
    killed = subprocess.Popen(tiny_run_cmd(out, "killed", "--models", "TinyViT"), env=env, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    deadline = time.monotonic() + 300
    while not any(p.read_text().startswith("pid ") for p in (out / "killed").glob("raw/.*.lock")):
        assert time.monotonic() < deadline and killed.poll() is None, "the run never took its lock"
        time.sleep(0.05)
    killed.send_signal(signal.SIGKILL)
    killed.wait()

    # the merged tables, from the redacted CSV
    code, err = call(["merge", str(out / "s"), "--no-plots"])
    assert code == 0, err

    files = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name.startswith(".") and p.name.endswith(".lock") for p in files)  # hidden ones too
    assert any(p.suffix == ".md" for p in files)
    found = {str(p): leaks(p.read_bytes(), tokens) for p in files}
    found.update({name: leaks(text, tokens) for name, text in streams.items()})
    assert not {k: v for k, v in found.items() if v}, "secrets written"


def test_redact_names_values_and_lengths() -> None:
    env = {
        "HF_TOKEN": "hf_abcdefghijkl",
        "OPENAI_API_KEY": "sk-abcdefghijkl",
        "my_secret": "hunter2hunter2",
        "AWS_SECRET_ACCESS_KEY": "hf_abcdefghijkl-and-more",  # contains HF_TOKEN's value
        "SHORT_KEY": "1234",  # too short to redact without mangling numbers
        "KEYBOARD": "not-a-secret-name",
        "PATH": "/usr/bin",
    }
    text = (
        "a hf_abcdefghijkl-and-more b hf_abcdefghijkl c sk-abcdefghijkl d hunter2hunter2 e 1234 "
        "f not-a-secret-name"
    )
    assert redact.redact(text, env) == (
        "a <redacted:AWS_SECRET_ACCESS_KEY> b <redacted:HF_TOKEN> c <redacted:OPENAI_API_KEY> "
        "d <redacted:my_secret> e 1234 f not-a-secret-name"
    )
    assert redact.redact_bytes(b"x hf_abcdefghijkl\xff", env) == b"x <redacted:HF_TOKEN>\xff"


def test_redacting_stream_sees_a_token_split_over_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_splitsplitsplit")
    target = io.StringIO()
    stream = redact.RedactingStream(target)
    for part in ("token: hf_spli", "tsplit", "split\nnext ", "hf_splitsplitsplit"):
        stream.write(part)
    assert target.getvalue() == "token: <redacted:HF_TOKEN>\n"  # the rest waits for a newline
    stream.flush()
    assert target.getvalue() == "token: <redacted:HF_TOKEN>\nnext <redacted:HF_TOKEN>"


def test_one_line_redacts_before_it_cuts(monkeypatch: pytest.MonkeyPatch) -> None:
    from suite.results import one_line

    monkeypatch.setenv("HF_TOKEN", "hf_" + "x" * 40)
    text = one_line("e" * 280 + " hf_" + "x" * 40, limit=300)
    assert "hf_" not in text and "xxxxxxxxxx" not in text


# --- one rule for what a secret is (suite.redact): redaction, docker commands, build arguments ---

SECRET_WORD = st.sampled_from(redact.SECRET_WORDS)
# Variable names made of words: random ones, secret words in any case, and near misses.
NAME_WORD = st.one_of(
    st.from_regex(r"[A-Za-z0-9]{1,8}", fullmatch=True),
    SECRET_WORD,
    SECRET_WORD.map(str.lower),
    st.sampled_from(["KEYBOARD", "TOKENIZERS", "SECRETARY", "MONKEY", "HF", "API", "PATH"]),
)
ENV_NAME = st.builds(
    lambda words, sep: sep.join(words),
    st.lists(NAME_WORD, min_size=1, max_size=4),
    st.sampled_from(["_", ""]),
).filter(lambda name: re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None)
VALUE = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/.", max_size=40)


def build_arg_refusal(name: str) -> str | None:
    """The one-line error for a build argument `name` (None: accepted)."""
    data = {"kind": "stable", "python": "3.10", "torch": "2.0.1", "container": "containers/x"}
    base = "ubuntu:22.04@sha256:" + "0" * 64  # what every container build needs beside it
    args = {name: "a-value", "BASE_IMAGE": base, "TORCH_NIGHTLY_DATE": "newest"}
    try:
        read_build(Reader("m.yaml", "builds.x", {**data, "build_args": args}), "x")
    except UsageError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(
    "name",
    ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "gh_token", "OPENAI_API_KEY", "APIKEY", "AWS_SECRET_ACCESS_KEY",
     "SSH_KEY_PATH", "PGPASSWORD", "DB_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "apiKeys", "my-secret"],
)  # fmt: skip
def test_secret_names(name: str) -> None:
    assert redact.is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["KEYBOARD", "TOKENIZERS_PARALLELISM", "PATH", "HF_HOME", "TORCH_WHEEL_SHA256", "SECRETARY"]
)
def test_names_that_are_not_secrets(name: str) -> None:
    assert not redact.is_secret_name(name)


@given(
    prefix=st.from_regex(r"[A-Za-z0-9_]{0,16}", fullmatch=True),
    suffix=st.sampled_from(["_TOKEN", "_KEY", "_SECRET", "_token", "_Key", "_secret"]),
)
def test_every_name_the_old_redaction_and_docker_rules_caught_is_still_a_secret(
    prefix: str, suffix: str
) -> None:
    """HF_TOKEN and any name ending in _TOKEN, _KEY or _SECRET, any case (the old redact and
    docker rules), are secrets."""
    assert redact.is_secret_name(prefix + suffix)


@given(
    before=st.from_regex(r"([A-Z][A-Z0-9]*_)?[A-Z0-9]{0,6}", fullmatch=True),
    word=SECRET_WORD,
    plural=st.booleans(),
    after=st.from_regex(r"(_[A-Z0-9]{1,8}){0,2}", fullmatch=True),
)
def test_a_build_argument_that_looks_like_a_secret_is_refused(
    before: str, word: str, plural: bool, after: str
) -> None:
    """A word that is, or ends with, TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL(S)
    anywhere in a build argument's name: refused when matrix.yaml loads."""
    name = before + word + ("S" if plural else "") + after
    refusal = build_arg_refusal(name)
    assert refusal is not None and refusal.startswith(f"m.yaml: builds.x.build_args.{name}: ")
    assert "looks like a secret" in refusal or "upper case" in refusal


@given(name=ENV_NAME, value=VALUE)
def test_redaction_docker_refusal_and_build_arguments_follow_one_rule(name: str, value: str) -> None:
    """For any variable: its value is redacted exactly when a docker command holding it is
    refused, exactly when the name is a secret's and the value is long enough; a build
    argument of that name is refused as a secret exactly when the name is a secret's."""
    env = {name: value}
    secret = redact.is_secret_name(name) and len(value) >= redact.MIN_LENGTH
    assert (redact.redact(f"x {value} y", env) != f"x {value} y") == secret
    assert (value not in redact.redact(value, env)) == secret
    assert (docker.leaked_secrets(["docker", "run", f"--label=v{value}"], env) == [name]) == secret
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", name) and name not in DERIVED_BUILD_ARGS:
        refusal = build_arg_refusal(name)
        assert (refusal is not None and "looks like a secret" in refusal) == redact.is_secret_name(name)
