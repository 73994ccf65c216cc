"""`plan` remembers a model check that found nothing (suite.run.checkcache): the same models,
the same libraries and the same checking code start no second Python; a problem is checked and
reported every time; anything the answer depends on changing is a new check."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from support import call

from suite.run import checkcache, preflight

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"


@pytest.fixture
def children(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """A fresh cache folder; the model checks' children, as they are asked."""
    monkeypatch.setenv("SUITE_CACHE_DIR", str(tmp_path / "cache"))
    started: list[str] = []
    real = preflight.Child.problems

    def recording(child: preflight.Child, models: str):
        started.append(models)
        return real(child, models)

    monkeypatch.setattr(preflight.Child, "problems", recording)
    return started


def _plan(matrix: Path) -> tuple[int, str]:
    return call(["plan", "--matrix", str(matrix), "--profile", "tiny"])


def test_a_clean_check_is_made_once(tmp_path: Path, children: list[str]) -> None:
    assert _plan(TINY)[0] == 0 and len(children) == 1
    assert _plan(TINY)[0] == 0 and len(children) == 1  # remembered: no second child
    (entry,) = (tmp_path / "cache" / "model-checks").iterdir()
    assert entry.name == checkcache.key_of(children[0])
    # another model (a layer more) is another check
    data = yaml.safe_load(TINY.read_text())
    name = "TinyViT"
    data["models"][name].setdefault("config", {})["num_hidden_layers"] = 3
    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump(data))
    assert _plan(other)[0] == 0 and len(children) == 2


def test_a_problem_is_checked_and_reported_every_time(tmp_path: Path, children: list[str]) -> None:
    data = yaml.safe_load(TINY.read_text())
    name = "TinyViT"
    data["models"][name]["model_type"] = "vitt"  # a typo transformers rejects
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    for n in (1, 2):
        code, err = _plan(bad)
        assert code == 2 and "vitt" in err and "models.TinyViT" in err, err
        assert len(children) == n
    assert not (tmp_path / "cache" / "model-checks").exists()


def test_the_key_follows_the_libraries_and_the_checking_code(monkeypatch: pytest.MonkeyPatch) -> None:
    key = checkcache.key_of("[]")
    assert key is not None and key == checkcache.key_of("[]") != checkcache.key_of("[1]")
    real = checkcache._library
    monkeypatch.setattr(checkcache, "_library", lambda name: real(name) + " newer")
    assert checkcache.key_of("[]") != key  # another transformers (or torch) install
    monkeypatch.setattr(checkcache, "_library", lambda name: None)
    assert checkcache.key_of("[]") is None  # not installed: nothing to remember it by
    assert not checkcache.found_clean(None)
    checkcache.remember_clean(None)  # no key, no entry


def test_an_unwritable_cache_only_means_checking_again(
    tmp_path: Path, children: list[str], monkeypatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("SUITE_CACHE_DIR", str(blocker))
    assert _plan(TINY)[0] == 0 and _plan(TINY)[0] == 0 and len(children) == 2
