"""Every row says which wheels ran: the nightly's date, the torch wheel by URL and sha256 as
the image installed it, torchvision's version."""

from __future__ import annotations

from pathlib import Path

from support.runner import cells

from suite.measure import provenance
from suite.results.columns import TABLE
from suite.run import runner

NEW = ("nightly_date", "torch_wheel_url", "torch_wheel_sha256", "torchvision_version")


def test_the_columns_are_appended_together_after_the_older_ones() -> None:
    names = [c.name for c in TABLE]
    at = names.index(NEW[0])
    assert tuple(names[at : at + len(NEW)]) == NEW  # one block, in this order
    assert at > names.index("image_id")  # appended: no older column moved


def test_the_nightly_date_is_the_images_else_torchs_own_else_empty() -> None:
    assert provenance.nightly_date("2.16.0.dev20261126+cu130", {}) == "20261126"
    assert (
        provenance.nightly_date("2.16.0.dev20261126+cu130", {"SUITE_NIGHTLY_DATE": "20261125"}) == "20261125"
    )
    assert provenance.nightly_date("2.14.1+cu130", {"SUITE_NIGHTLY_DATE": ""}) == ""
    assert provenance.nightly_date("2.14.1", {"SUITE_NIGHTLY_DATE": "newest"}) == ""  # never a non-date


def test_a_row_carries_the_images_wheel(tmp_path: Path, monkeypatch) -> None:
    url = "https://example.invalid/whl/torch-2.16.0.dev20261126%2Bcu130-cp311-cp311-linux_x86_64.whl"
    monkeypatch.setenv("SUITE_TORCH_WHEEL_URL", url)
    monkeypatch.setenv("SUITE_TORCH_WHEEL_SHA256", "ab" * 32)
    monkeypatch.setenv("SUITE_NIGHTLY_DATE", "20261126")
    env = provenance.collect("cpu")
    assert provenance.from_json(provenance.to_json(env)) == env  # parent and child agree
    row = runner.build_row(cells(tmp_path)[0], env, "r", {"status": "ok"}, "t", 1.0, "log", "")
    assert (row["torch_wheel_url"], row["torch_wheel_sha256"], row["nightly_date"]) == (
        url,
        "ab" * 32,
        "20261126",
    )
    assert "torchvision_version" in row
