"""--shard i/n: parsing, exact partition, determinism, balance by estimated cost."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import examples

from suite.cli import main
from suite.errors import UsageError
from suite.results import key_of
from suite.spec import Cell, cost, expand, load_matrix
from suite.spec.shard import Shard, assign, select

ROOT = Path(__file__).resolve().parents[2]
GUIDE = Path(__file__).resolve().parents[1] / "data" / "guide-matrix.yaml"
MATRICES = {"guide": GUIDE, "project": ROOT / "matrix.yaml"}


def cells_of(matrix: Path = GUIDE, profile: str = "full") -> list[Cell]:
    return expand(load_matrix(matrix), profile, "nightly")


def keys(cells: list[Cell]) -> list[tuple[str, ...]]:
    return [key_of(c.key_fields("gpu")) for c in cells]


# --- parsing -----------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "index", "count"), [("1/1", 1, 1), ("2/4", 2, 4), (" 7/7 ", 7, 7)])
def test_parse_accepts_i_of_n(text: str, index: int, count: int) -> None:
    shard = Shard.parse(text)
    assert (shard.index, shard.count, shard.label) == (index, count, f"{index}/{count}")


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "a/b", "1/0", "", "1/2/3", "1 / 2", "-1/2", "1.0/2"])
def test_parse_rejects_anything_else(text: str) -> None:
    with pytest.raises(UsageError, match=r"^--shard: "):
        Shard.parse(text)


@pytest.mark.parametrize("verb", ["plan", "run"])
def test_bad_shard_is_one_line_exit_2(verb: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([verb, "--shard", "5/4"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"suite {verb}: error: --shard: '5/4'")


# --- partition ---------------------------------------------------------------------------


@pytest.mark.parametrize("matrix", MATRICES)
@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 6, 7, 200])
def test_shards_partition_the_cells_exactly(matrix: str, count: int) -> None:
    cells = cells_of(MATRICES[matrix])
    shards = [keys(select(cells, Shard(i, count))) for i in range(1, count + 1)]
    planned = keys(cells)  # key_of once per cell: it formats (and redacts) every field
    union = [k for shard in shards for k in shard]
    assert sorted(union) == sorted(planned)  # covering, and disjoint (no key twice)
    assert len(set(union)) == len(union) == len(cells)
    for shard in shards:  # each shard keeps plan order
        mine = set(shard)
        assert shard == [k for k in planned if k in mine]
    if count > len(cells):
        assert sum(1 for s in shards if not s) == count - len(cells)


def test_assignment_ignores_input_order() -> None:
    """A cell's shard depends on the cells, not on how they were listed."""
    cells = cells_of(profile="autotune")
    shuffled = cells[:]
    random.Random(7).shuffle(shuffled)
    for count in (2, 5, 7):
        want = [sorted(keys([cells[i] for i in s])) for s in assign(cells, count)]
        got = [sorted(keys([shuffled[i] for i in s])) for s in assign(shuffled, count)]
        assert got == want


def test_plan_is_the_same_under_other_hash_seeds() -> None:
    def plan(seed: str, shard: str) -> str:
        cmd = [sys.executable, "-m", "suite", "plan", "--matrix", str(GUIDE), "--profile", "autotune"]
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run(
            [*cmd, "--shard", shard], capture_output=True, text=True, env=env, cwd=ROOT, check=True
        )
        return proc.stdout

    for shard in ("1/3", "3/3"):
        assert plan("1", shard) == plan("4242", shard)


# --- balance -----------------------------------------------------------------------------


def loads(cells: list[Cell], count: int) -> list[float]:
    return [sum(cost.estimate_seconds(cells[i]) for i in s) for s in assign(cells, count)]


@pytest.mark.parametrize("profile", ["full", "autotune"])
@pytest.mark.parametrize("count", [2, 3, 4, 6, 8, 12, 16])
def test_full_profile_is_balanced(profile: str, count: int) -> None:
    shard_loads = loads(cells_of(profile=profile), count)
    assert max(shard_loads) <= 1.10 * sum(shard_loads) / count


def test_compile_heavy_cells_are_spread() -> None:
    """Every shard gets its share of the max-autotune cells, not one shard all of them."""
    cells = cells_of(profile="autotune")
    heavy = sum(c.mode == "max-autotune" for c in cells)
    for count in (2, 3, 4, 6):
        per_shard = [sum(cells[i].mode == "max-autotune" for i in s) for s in assign(cells, count)]
        assert min(per_shard) >= heavy // count - 1, per_shard


@settings(max_examples=examples(60), deadline=None)
@given(
    picks=st.lists(st.integers(0, 107), min_size=1, max_size=108, unique=True),
    count=st.integers(1, 20),
)
def test_greedy_bound_holds_for_any_selection(picks: list[int], count: int) -> None:
    """Greedy list scheduling: the fullest shard exceeds the mean by at most one cell."""
    everything = cells_of()
    cells = [everything[i] for i in sorted(picks)]
    shard_loads = loads(cells, count)
    biggest = max(cost.estimate_seconds(c) for c in cells)
    assert max(shard_loads) <= sum(shard_loads) / count + biggest + 1e-6


# --- the cost model ----------------------------------------------------------------------


def test_cost_grows_with_compile_mode_size_batch_and_iterations() -> None:
    vit = next(c for c in cells_of() if c.model.name == "ViT" and c.batch_size == 1 and c.mode == "eager")
    by_mode = [cost.estimate_seconds(replace(vit, mode=m)) for m in ("eager", "default", "max-autotune")]
    # max-autotune's compile is several times default's (the cell's fixed costs aside)
    assert by_mode == sorted(by_mode) and by_mode[2] - by_mode[0] > 3 * (by_mode[1] - by_mode[0])
    assert cost.estimate_seconds(replace(vit, batch_size=16)) > cost.estimate_seconds(vit)
    bigger = replace(vit, model=replace(vit.model, published_params_m=300.0))
    assert cost.estimate_seconds(bigger) > cost.estimate_seconds(vit)
    longer = replace(vit, settings=replace(vit.settings, iterations=3000))
    assert cost.estimate_seconds(longer) > cost.estimate_seconds(vit)


def test_plan_shows_the_shard_and_every_shards_estimate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--matrix", str(GUIDE), "--profile", "full", "--shard", "2/3"]) == 0
    out = capsys.readouterr().out
    cells = cells_of()
    mine = select(cells, Shard(2, 3))
    assert f"shard 2/3: {len(mine)} of the {len(cells)} cell(s), estimated " in out
    rows = [ln for ln in out.splitlines() if ln.strip()[:1].isdigit()]
    assert [r.split()[0] for r in rows] == [str(cells.index(c) + 1) for c in mine]
    per_shard = next(ln for ln in out.splitlines() if ln.startswith("estimated per shard:"))
    assert all(f"{i}/3 " in per_shard for i in (1, 2, 3)) and "2/3 " in per_shard.split("(this one)")[0]


def test_plan_says_when_a_shard_is_empty(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--profile", "smoke", "--models", "ResNet", "--shard", "9/9"]) == 0
    assert "shard 9/9: 0 of the 3 cell(s)" in capsys.readouterr().out
