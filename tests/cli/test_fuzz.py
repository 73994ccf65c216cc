"""Property-based tests: whatever matrix.yaml or command line comes in, the suite answers with
success or one line naming the file and field (or flag) and exit status 2; never a traceback.

`suite.cli.main` runs in-process (fast); `plan` builds no model; for `run`, the probe and the
sweep itself are replaced by stand-ins (they have their own tests), so what is fuzzed here is
everything between the command line and the first cell.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import call_output as call
from support import examples, stub_environment
from support.matrices import FUZZ_VALID as VALID

from suite.measure import config_check
from suite.results import RowWriter
from suite.run import preflight, runner


def fuzz(count: int) -> settings:
    return settings(
        max_examples=examples(count),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )


# A valid matrix that uses every section and most keys.

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.sampled_from(["all", "eager", "float32", "random", "3.10", "ViT", "Image Classification", ""]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=10), st.integers(), st.booleans()), inner, max_size=4),
    ),
    max_leaves=12,
)


def paths_of(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a nested structure (mapping keys and list indices)."""
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found += paths_of(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += paths_of(value, (*prefix, i))
    return found


@st.composite
def mutated_matrices(draw: st.DrawFn) -> dict[str, Any]:
    """The valid matrix after 1-3 structured mutations: a value replaced by one of another
    type or a bad value, a key deleted, an unknown key added, a key renamed."""
    data = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths_of(data)))
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        op = draw(st.sampled_from(["replace", "delete", "add", "rename"]))
        if not path:
            if op == "replace":
                data = draw(values)
                if not isinstance(data, dict):
                    return data
            continue
        mutate(draw, parent, path[-1], op)
    return data


def mutate(draw: st.DrawFn, parent: Any, key: Any, op: str) -> None:
    """One mutation of `parent[key]`: replaced, deleted, added to, or renamed."""
    if op == "replace":
        parent[key] = draw(values)
    elif op == "delete":
        del parent[key]
    elif op == "add":
        target = parent[key]
        if isinstance(target, dict):
            target[draw(st.text(min_size=1, max_size=10))] = draw(values)
        elif isinstance(target, list):
            target.append(draw(values))
    elif op == "rename" and isinstance(parent, dict):
        parent[draw(st.one_of(st.text(max_size=10), st.integers()))] = parent.pop(key)


@pytest.fixture(autouse=True)
def models_checked_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """The model check's own code (suite.measure.config_check), run here instead of in a child
    process: the same problems, without importing transformers once per generated matrix
    (minutes over a fuzz run); an exception in it would now fail the test instead of being a
    warning."""

    def problems(child: preflight.Child, models: str) -> list[config_check.Problem]:
        return config_check.check_items(config_check.read_request(models))

    monkeypatch.setattr(preflight.Child, "problems", problems)


def assert_one_line_error(code: int, err: str, verb: str) -> str:
    """Exit 2 and exactly one line on stderr, `suite <verb>: error: <where>: <what>`; returns
    what follows `error: `."""
    assert code == 2, err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    prefix = f"suite {verb}: error: "
    assert lines[0].startswith(prefix) and ": " in lines[0][len(prefix) :], lines[0]
    return lines[0][len(prefix) :]


def check_plan(path: Path) -> None:
    code, out, err = call(["plan", "--matrix", str(path), "--profile", "smoke"])
    if code == 0:
        assert "cell(s)" in out and not err.strip(), err
        return
    message = assert_one_line_error(code, err, "plan")
    # the matrix file and the field in it (or its line), or the flag that pointed into it
    assert re.match(rf"{re.escape(str(path))}(:\d+)?: \S.*: \S", message) or message.startswith(
        "--profile: "
    ), message


@fuzz(350)
@given(data=mutated_matrices())
def test_fuzz_matrix_structure(data: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("m") / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True))
    check_plan(path)


@fuzz(150)
@given(
    text=st.one_of(
        st.text(max_size=200),
        st.builds(
            lambda head, tail: head + tail,
            st.sampled_from(
                [
                    "version: 1\n",
                    "builds:\n  x: [\n",
                    "models: {a: &x [*x]}\n",
                    "- !!python/name:os.system\n",
                    "a: b: c\n",
                    "\t",
                ]
            ),
            st.text(max_size=60),
        ),
        st.binary(max_size=100).map(lambda b: b.decode("latin-1")),
    )
)
def test_fuzz_matrix_text(text: str, tmp_path_factory: pytest.TempPathFactory) -> None:
    path = tmp_path_factory.mktemp("t") / "matrix.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass"))
    check_plan(path)


def test_valid_matrix_plans_and_a_named_field_is_reported(tmp_path: Path) -> None:
    """The fuzzers' two outcomes, on inputs whose answer is known."""
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(VALID))
    code, out, err = call(["plan", "--matrix", str(path), "--profile", "smoke"])
    # `models: all` is ViT and OwlViT (custom configurations run where a profile names them):
    # 2 x (eager, default), plus ViT-wide at batch 1 and 4
    assert code == 0 and "profile smoke: 6 cell(s)" in out, err
    bad = copy.deepcopy(VALID)
    bad["profiles"]["full"]["select"][0]["batch_sizes"] = [1, "4"]
    path.write_text(yaml.safe_dump(bad))
    code, _, err = call(["plan", "--matrix", str(path), "--profile", "full"])
    message = assert_one_line_error(code, err, "plan")
    assert message.startswith(f"{path}: profiles.full.select[0].batch_sizes: batch sizes must be integers")


# --- command lines ----------------------------------------------------------------------------

FAKE_ENV = stub_environment(gpu_name="fuzz", torch_version="2.13.0", python_version="3", image="host",
                            suite_version="0", cpu_name="fuzz")  # fmt: skip


def write_small_run(folder: Path, mean: float) -> Path:
    base = {
        "run_id": "r",
        "build": "current",
        "device": "cpu",
        "gpu_name": "cpu",
        "task": "Image Classification",
        "model": "ViT",
        "model_id": "vit",
        "weights": "random",
        "dtype": "float32",
        "scenario": "inference",
        "torch_version": "2.13.0",
        "started_at": "2026-01-01T00:00:00+00:00",
    }
    with RowWriter(folder / "raw" / "current__cpu.csv") as w:
        for bs in (1, 4):
            w.append(
                {
                    **base,
                    "batch_size": bs,
                    "mode": "eager",
                    "status": "ok",
                    "mean_ms": mean,
                    "median_ms": mean,
                    "ci95_low_ms": mean * 0.9,
                    "ci95_high_ms": mean * 1.1,
                }
            )
            w.append({**base, "batch_size": bs, "mode": "default", "status": "error", "error": "boom"})
    return folder


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("places")
    (root / "empty-dir").mkdir()
    (root / "file.txt").write_text("not a csv\n")
    (root / "garbage.csv").write_bytes(b"\x00\xff,\n" * 3)
    (root / "nul.csv").write_text("run_id,build\x00\n1,2\n")
    return {
        "base": str(write_small_run(root / "base", 10.0)),
        "new": str(write_small_run(root / "new", 12.0)),
        "base_csv": str(root / "base" / "raw" / "current__cpu.csv"),
        "dir": str(root / "empty-dir"),
        "file": str(root / "file.txt"),
        "garbage": str(root / "garbage.csv"),
        "nul": str(root / "nul.csv"),
        "missing": str(root / "missing"),
        "matrix": str(Path(__file__).parents[1] / "data" / "tiny-matrix.yaml"),
        "out": str(root / "out"),
        "under_file": str(root / "file.txt" / "sub"),
    }


def tokens(places: dict[str, str]) -> st.SearchStrategy[str]:
    """A value for any flag: good ones, edge cases, paths of every kind, random text."""
    return st.one_of(
        st.sampled_from(
            [
                "1",
                "0",
                "-1",
                "2",
                "4",
                "1,4",
                "1,,2",
                ",",
                "",
                " ",
                "nan",
                "inf",
                "-inf",
                "1e400",
                "0.5",
                "1/2",
                "0/1",
                "2/1",
                "1/0",
                "3/3",
                "1/99999999999999999",
                "a/b",
                "auto",
                "cpu",
                "cuda",
                "eager",
                "default,eager",
                "fast",
                "inference",
                "train",
                "random",
                "pretrained",
                "tiny",
                "smoke",
                "full",
                "TinyViT",
                "tinyvit,TinyResNet",
                "nope",
                "current",
                "any",
                "run-1",
                "../x",
                "a b",
                "http://example.invalid/x.jpg",
                "0.05",
                "1.0",
                "-0.1",
                "99999999999999999999",
            ]
        ),
        st.sampled_from(sorted(places.values())),
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12),
    )


FLAGS = {
    "plan": [
        "--matrix",
        "--profile",
        "--build",
        "--models",
        "--batch-sizes",
        "--modes",
        "--scenarios",
        "--device",
        "--weights",
        "--iterations",
        "--warmup",
        "--timeout",
        "--image",
        "--out",
        "--run-id",
        "--shard",
    ],
    "env": ["--device"],
    "merge": ["-o", "--out", "--matrix", "--reference"],
    "compare": ["--threshold", "-o", "--output"],
}
FLAGS["run"] = [*FLAGS["plan"], "--min-free-mb"]
SWITCHES = {"env": ["--json"], "merge": ["--strict"], "run": ["--keep-failed"]}


@st.composite
def command_lines(draw: st.DrawFn, places: dict[str, str]) -> list[str]:
    verb = draw(st.sampled_from(sorted(FLAGS)))
    argv = [verb]
    value = tokens(places)
    if verb in ("merge", "compare"):  # positional paths first, some of them
        argv += draw(st.lists(st.sampled_from(sorted(places.values())) | value, max_size=3))
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 9))
        if kind < 6:
            argv += [draw(st.sampled_from(FLAGS[verb])), draw(value)]
        elif kind < 7 and verb in SWITCHES:
            argv.append(draw(st.sampled_from(SWITCHES[verb])))
        elif kind < 8:
            argv.append(f"{draw(st.sampled_from(FLAGS[verb]))}={draw(value)}")
        elif kind < 9:
            argv.append(draw(st.sampled_from(FLAGS[verb])))  # a flag without its value
        else:
            argv.append(draw(value))
    if verb == "merge":
        argv.append("--no-plots")  # plots render slowly; tests/report/test_publish.py covers them
    if verb in ("plan", "run") and draw(st.booleans()):
        argv += ["--matrix", places["matrix"], "--profile", "tiny"]
    if verb == "run" and "--out" not in argv:
        argv += ["--out", places["out"]]
    return argv


@pytest.fixture
def stand_ins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[tuple]:
    """No probe child, no sweep: record what `run` would have run; cwd in a scratch folder
    (relative --out / -o values land there)."""
    calls: list[tuple] = []
    monkeypatch.setattr(preflight, "probe", lambda device, python=None: FAKE_ENV)

    def fake_run_cells(sweep: runner.Sweep):
        kw = {"keep_failed": sweep.keep_failed, "min_free_mb": sweep.min_free_mb, "banner": sweep.banner}
        calls.append((len(sweep.cells), sweep.out, sweep.run_id, sweep.shard, kw))
        return runner.RunReport(csv=Path(sweep.out) / sweep.run_id / "raw" / "x.csv")

    monkeypatch.setattr(runner, "run_cells", fake_run_cells)
    monkeypatch.chdir(tmp_path)
    return calls


@fuzz(400)
@given(data=st.data())
def test_fuzz_command_lines(data: st.DataObject, places: dict[str, str], stand_ins: list[tuple]) -> None:
    argv = data.draw(command_lines(places))
    before = len(stand_ins)
    try:
        code, _, err = call(argv)
    except SystemExit as exc:  # only --help (an abbreviation of it) leaves through argparse
        assert exc.code == 0, argv
        return
    verb = argv[0]
    if code == 2:
        assert_one_line_error(code, err, verb)
        assert len(stand_ins) == before, "a run started despite the error"
        return
    assert "Traceback" not in err and "internal error" not in err, err
    if verb == "compare":
        assert code in (0, 1), err
    else:
        assert code == 0, err
    if verb == "run":
        assert len(stand_ins) == before + 1 and stand_ins[-1][0] > 0


@pytest.mark.parametrize(
    ("argv", "where"),
    [
        (["plan", "--batch-sizes", "1,x"], "--batch-sizes"),
        (["plan", "--shard", "1/99999999999999999"], "--shard"),
        (["run", "--iterations", "1"], "--iterations"),
        (["run", "--min-free-mb", "-5"], "--min-free-mb"),
        (["run", "--matrix", "{tiny}", "--profile", "tiny", "--models", ""], "--models"),
        (["merge", "{garbage}", "--no-plots"], ""),
        (["compare", "{base}", "{new}", "-o", "{dir}"], "-o"),
        (["merge", "{base}", "-o", "{file}", "--no-plots"], "-o"),
    ],
)
def test_known_bad_command_lines_name_the_flag(
    argv: list[str], where: str, places: dict[str, str], stand_ins: list[tuple]
) -> None:
    argv = [a.format(tiny=places["matrix"], **places) for a in argv]
    code, _, err = call(argv)
    message = assert_one_line_error(code, err, argv[0])
    assert message.startswith(where), err
