"""The pages' data, without a browser: the run page is read off the merge's tables (its figures are
theirs), failures, suspect cells and a missing build are listed for what they are; the history
page takes frames built from the contract's columns alone (docs/pages.md) and refuses others in
one line; `history html` works with a store's `view()` and says in one line when there is none.
(tests/report/test_pages_browser.py opens the pages in Chromium.)"""

from __future__ import annotations

import json
import re
import sys
import types
from pathlib import Path

import pandas as pd
import pytest
from support.pages import MODELS, T4, TROUBLED, page_data

from suite.cli import main
from suite.errors import UsageError
from suite.report.pages import assets
from suite.report.pages.history_page import CHANGE_COLUMNS, POINT_COLUMNS, history_data, write_history_page
from suite.report.pages.shell import embed_json
from tools.pages.sample import A100, sample_history, write_sample_run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def troubled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = write_sample_run(tmp_path_factory.mktemp("troubled") / "run", TROUBLED)
    assert main(["merge", str(run), "--no-plots"]) == 0
    return run


def test_merge_writes_the_run_page_beside_tables_md_with_plotly_beside_it(troubled: Path) -> None:
    tables = troubled / "tables"
    page = tables / "index.html"
    text = page.read_text(encoding="utf-8")
    assert (tables / "tables.md").is_file() and (tables / assets.PLOTLY_FILE).is_file()
    # nothing fetched: every script is inline or the bundle beside the page
    sources = re.findall(r'<script[^>]*src="([^"]+)"', text)
    assert sources == [assets.PLOTLY_FILE]
    assert not re.search(r'(src|href)="(https?:)?//', text)


def test_the_run_pages_figures_are_the_tables_own(troubled: Path) -> None:
    data = page_data(troubled / "tables" / "index.html")
    table = pd.read_csv(
        next((troubled / "tables").glob("compile-vs-eager__nvidia-a100-sxm4-80gb__nightly__bs1__default.csv"))
    )
    shown = {
        c["model"]: c
        for c in data["cells"]
        if c["table"].startswith("compile-vs-eager__nvidia-a100-sxm4-80gb__nightly__bs1__default")
    }
    assert set(shown) == set(table["model"])
    for r in table.to_dict("records"):
        cell = shown[r["model"]]
        if cell["status"] != "ok":
            assert cell["speedup"] == {"word": r["speed-up"]}
            continue
        assert cell["speedup"]["x"] == pytest.approx(float(r["speed-up"]), rel=1e-3)
        assert cell["speedup"]["lo"] == pytest.approx(float(r["CI low"]), rel=1e-3)
        assert cell["compiled"]["ms"] == pytest.approx(float(r["with torch.compile"]), rel=1e-6)
        assert cell["eager"]["ms"] == pytest.approx(float(r["without torch.compile"]), rel=1e-6)
    # every compile-vs-eager row is a cell of the page: 2 GPUs' builds x batch sizes x modes x models
    rows = sum(len(pd.read_csv(p)) for p in (troubled / "tables").glob("compile-vs-eager__*.csv"))
    assert len(data["cells"]) == rows


def test_failures_suspects_and_the_missing_build_are_listed(troubled: Path) -> None:
    problems = page_data(troubled / "tables" / "index.html")["problems"]
    failed = {(f["gpu"], f["build"], f["label"], f["bs"], f["mode"]): f["status"] for f in problems["failed"]}
    assert failed == {
        (A100, "stable", "Object Detection/DETR", 4, "default"): "OOM",
        (A100, "nightly", "Image Classification/ViT", 1, "reduce-overhead"): "error",
        (T4, "stable", "Image Segmentation/Segformer", 1, "eager"): "timeout",
    }
    assert all(f["error"] for f in problems["failed"])
    why = {(s["build"], s["label"], s["bs"], s["mode"]): s["why"] for s in problems["suspect"]}
    assert set(why) == {
        ("nightly", "Object Detection/DETR", 1, "default"),
        ("stable", "Image Segmentation/Segformer", 4, "reduce-overhead"),
    }
    assert "busy, steal" in why["nightly", "Object Detection/DETR", 1, "default"]
    assert "accuracy" in why["stable", "Image Segmentation/Segformer", 4, "reduce-overhead"]
    assert problems["missing_builds"] == [
        {"gpu": T4, "build": "nightly", "others": ["stable"], "kind": "nightly"}
    ]


def test_a_failed_compiled_cell_has_its_word_not_a_number(troubled: Path) -> None:
    cells = page_data(troubled / "tables" / "index.html")["cells"]
    (oom,) = [
        c
        for c in cells
        if c["gpu"] == A100
        and c["build"] == "stable"
        and c["model"] == "DETR"
        and c["bs"] == 4
        and c["mode"] == "default"
    ]
    assert oom["status"] == "oom" and oom["speedup"] == {"word": "OOM"} and oom["compiled"]["ms"] is None
    (busy,) = [
        c
        for c in cells
        if c["build"] == "nightly" and c["model"] == "DETR" and c["bs"] == 1 and c["mode"] == "default"
    ]
    assert busy["health"] == ["busy", "steal"] and busy["speedup"]["unhealthy"]


def test_embedded_data_cannot_end_its_script_element() -> None:
    text = embed_json({"error": "</script><script>alert(1)</script> <!-- x", "nan": float("nan")})
    assert "</" not in text and "<!--" not in text
    assert json.loads(text) == {"error": "</script><script>alert(1)</script> <!-- x", "nan": None}


def test_the_vendored_plotly_is_the_recorded_one() -> None:
    path = assets.check_vendored()
    head = path.read_text(encoding="utf-8")[:200]
    assert f"plotly.js (basic - minified) v{assets.PLOTLY_VERSION}" in head
    assert (assets.VENDOR / "LICENSE-plotly.js.txt").read_text().startswith("MIT License")


# --- the history page --------------------------------------------------------------------------


def small_history(nights: int = 12):
    return sample_history(nights=nights, models=MODELS[:2], batch_sizes=(1, 4), modes=("eager", "default"))


def test_history_data_from_the_contracts_columns_alone() -> None:
    view = small_history()
    # the frames carry exactly the contract's columns: nothing else is read
    assert set(view.points.columns) == set(POINT_COLUMNS)
    assert set(view.changes.columns) == set(CHANGE_COLUMNS)
    data = history_data(view)
    assert len(data["dates"]) == 12 and data["dates"][0] == "2026-01-01"
    assert len(data["nights"]) == 12 * 2  # a night = one run of one build on one GPU
    assert len(data["series"]) == 2 * 2 * 2 * 2  # lines x models x batch sizes x modes
    assert all(n["page"].endswith("/tables/index.html") for n in data["nights"])
    for s in data["series"]:
        assert len(s["nights"]) == len(s["median_ms"]) == 12
        if s["mode"] == "eager":
            assert "speedup" not in s and "compile_s" not in s  # NaN all along: left out
        else:
            assert len(s["speedup"]) == len(s["speedup_lo"]) == len(s["compile_s"]) == 12
    # the change points: each on its series, with both nights' run pages and the commit range
    assert len(data["changes"]) == 2  # the nightly line's first model, default mode, 2 batch sizes
    for c in data["changes"]:
        series = data["series"][c["series"]]
        assert (series["model"], series["build_line"], series["mode"]) == ("ViT", "nightly 2.10", "default")
        assert c["url"].startswith("https://github.com/pytorch/pytorch/compare/")
        assert c["first_bad_page"].endswith("/tables/index.html") and c["last_good"] < c["first_bad"]


def decoded(data: dict, s: dict) -> pd.DataFrame:
    """A series back as figures, as static/history.js decodes it."""
    nights = [data["nights"][i] for i in pd.Series(s["nights"]).cumsum()]
    out = pd.DataFrame({"date": [n["date"] for n in nights], "run_id": [n["run"] for n in nights]})
    for key in ("speedup", "median_ms"):
        value = pd.Series(s.get(key, [None] * len(out)), dtype=float)
        for side, sign in (("lo", -1), ("hi", 1)):
            offset = pd.Series(s.get(f"{key}_{side}", [None] * len(out)), dtype=float)
            out[f"{key}_{side}"] = value * (1 + sign * offset / data["basis"])
        out[key] = value
    status = [data["usual"]["status"]] * len(out)
    for i, code in s["status"]:
        status[i] = code
    out["status"] = [data["statuses"][c] for c in status]
    return out


def test_the_pages_figures_decode_to_the_views_within_their_kept_digits() -> None:
    view = small_history(nights=20)  # night 17 fails in the compiled series
    data = history_data(view)
    for s in data["series"]:
        mine = decoded(data, s)
        frame = view.points[
            (view.points["model"] == s["model"])
            & (view.points["build"] == s["build"])
            & (view.points["batch_size"] == s["batch_size"])
            & (view.points["mode"] == s["mode"])
        ].sort_values("date")
        assert list(mine["run_id"]) == list(frame["run_id"])
        assert list(mine["status"]) == list(frame["status"])
        for mine_col, theirs in (
            ("median_ms", "median_ms"),
            ("median_ms_lo", "median_ci_low_ms"),
            ("median_ms_hi", "median_ci_high_ms"),
            ("speedup", "speedup"),
            ("speedup_lo", "speedup_ci_low"),
            ("speedup_hi", "speedup_ci_high"),
        ):
            expected = frame[theirs].to_numpy(dtype=float)
            got = mine[mine_col].to_numpy(dtype=float)
            assert (pd.isna(got) == pd.isna(expected)).all(), (s["model"], mine_col)
            ok = ~pd.isna(expected)
            assert abs(got[ok] / expected[ok] - 1).max(initial=0) < 1e-3, (s["model"], mine_col)
    failed = next(x for x in data["series"] if x["mode"] == "default")
    row = decoded(data, failed).set_index("date").loc["2026-01-18"]
    assert row["status"] == "oom" and pd.isna(row["median_ms"]) and pd.isna(row["speedup"])


@pytest.mark.parametrize("frame", ["points", "changes"])
def test_a_view_without_a_contract_column_is_refused_in_one_line(frame: str) -> None:
    view = small_history()
    broken = types.SimpleNamespace(points=view.points, changes=view.changes)
    setattr(broken, frame, getattr(view, frame).drop(columns=["gpu"]))
    with pytest.raises(UsageError, match=f"history view: {frame}.*lacks column\\(s\\) gpu"):
        history_data(broken)


def test_an_empty_history_still_makes_a_page(tmp_path: Path) -> None:
    empty = types.SimpleNamespace(
        points=pd.DataFrame(columns=list(POINT_COLUMNS)), changes=pd.DataFrame(columns=list(CHANGE_COLUMNS))
    )
    page = write_history_page(empty, tmp_path)
    assert page_data(page)["series"] == [] and (tmp_path / assets.PLOTLY_FILE).is_file()


# --- the CLI verb ------------------------------------------------------------------------------


def test_history_html_without_the_store_package_says_so(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "suite.history", None)  # as if the package were absent
    import suite

    monkeypatch.delattr(suite, "history", raising=False)  # a real one imported by another test
    assert main(["history", "html", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "suite history: error: history html: suite.history (the history store) is not in this checkout"
    ]


def test_history_html_draws_the_stores_view(tmp_path: Path, capsys, monkeypatch) -> None:
    asked = []
    store = types.ModuleType("suite.history")

    def view(store_url=None, **filters):
        asked.append((store_url, filters))
        return small_history()

    store.view = view  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "suite.history", store)
    # `from suite import history` reads the package's attribute first: where another test of this
    # worker imported the real suite.history, that attribute is the real module
    import suite

    monkeypatch.setattr(suite, "history", store, raising=False)
    out = str(tmp_path / "out")
    assert (
        main(
            [
                "history",
                "html",
                out,
                "--store",
                "s3://bucket/h",
                "--gpu",
                "NVIDIA H100",
                "--since",
                "2026-01-01",
            ]
        )
        == 0
    )
    assert asked == [("s3://bucket/h", {"gpu": "NVIDIA H100", "since": "2026-01-01"})]
    assert len(page_data(tmp_path / "out" / "index.html")["series"]) == 16
    assert "the history page ->" in capsys.readouterr().err


def test_history_html_refuses_a_file_as_its_folder(tmp_path: Path, capsys) -> None:
    target = tmp_path / "page"
    target.write_text("x")
    assert main(["history", "html", str(target)]) == 2
    assert "is a file, not a folder" in capsys.readouterr().err
