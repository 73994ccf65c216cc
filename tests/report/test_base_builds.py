"""Which build a build is compared with (spec.model.BASE_ORDER): the nightly job's pair,
`release` and `nightly-current`, gets its release-vs-nightly table and verdict column, as the
guide's pair, `stable` and `nightly`, gets its stable-vs-nightly one."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from support.rows import ROWS, write_run

from suite.history.verdict import base_night
from suite.report.load import load
from suite.report.study import Study, build_kinds
from suite.report.tables.stable_vs import stable_vs_others
from suite.spec.vocab import is_base_of

ROOT = Path(__file__).resolve().parents[2]


def test_the_order_of_bases() -> None:
    assert is_base_of("stable", "release") and is_base_of("stable", "nightly")
    assert is_base_of("release", "nightly")
    assert not is_base_of("nightly", "release") and not is_base_of("release", "stable")
    assert not is_base_of("nightly", "nightly")


def _renamed(names: dict[str, str]) -> list[dict]:
    return [{**r, "build": names.get(r["build"], r["build"])} for r in ROWS]


def test_the_nightly_jobs_pair_gets_its_table(tmp_path: Path) -> None:
    names = {"stable": "release", "nightly": "nightly-current"}
    kinds, _ = build_kinds(sorted(names.values()), ROOT / "matrix.yaml", explicit=True)
    assert kinds == {"release": "release", "nightly-current": "nightly"}
    tables = stable_vs_others(Study(load([write_run(tmp_path / "run", _renamed(names))]).frame, kinds))
    assert [t.name.split("__")[0] for t in tables] == ["release-vs-nightly-current"]


def test_the_guides_pair_keeps_its_table(tmp_path: Path) -> None:
    kinds, _ = build_kinds(["stable", "nightly"], ROOT / "matrix.yaml", explicit=True)
    tables = stable_vs_others(Study(load([write_run(tmp_path / "run", ROWS)]).frame, kinds))
    assert [t.name.split("__")[0] for t in tables] == ["stable-vs-nightly"]


def test_a_nightly_night_is_judged_against_the_release_of_its_run() -> None:
    where = [("stable", "H100"), ("release", "H100"), ("nightly", "H100"), ("release-a100", "A100")]
    nights = [SimpleNamespace(night_id=n, gpu=g) for n, g in where]
    kinds = {"stable": "stable", "release": "release", "nightly": "nightly", "release-a100": "release"}
    by_id = {n.night_id: n for n in nights}
    assert base_night(nights, kinds, by_id["nightly"]) is by_id["release"]
    assert base_night(nights, kinds, by_id["release"]) is by_id["stable"]
    assert base_night(nights, kinds, by_id["stable"]) is None
    assert base_night(nights, kinds, by_id["release-a100"]) is None  # no base on its GPU
    del kinds["release"], by_id["release"]
    nights = [n for n in nights if n.night_id != "release"]
    assert base_night(nights, kinds, by_id["nightly"]) is by_id["stable"]
