"""containers/nightly_pin.py against a fake nightly index served on the loopback."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nightly_pin", ROOT / "containers" / "nightly_pin.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["nightly_pin"] = module
    spec.loader.exec_module(module)
    return module


pin = _load()


def _page(names: list[str]) -> str:
    links = "\n".join(f'<a href="/whl/nightly/{n}#sha256=00">{n}</a><br/>' for n in names)
    return f"<!DOCTYPE html><html><body><h1>Links</h1>\n{links}\n</body></html>\n"


def _torch(date: str, py: str = "311", line: str = "2.15.0") -> str:
    return f"torch-{line}.dev{date}%2Bcu130-cp{py}-cp{py}-manylinux_2_28_x86_64.whl"


def _vision(date: str, py: str = "311") -> str:
    return f"torchvision-0.30.0.dev{date}%2Bcu130-cp{py}-cp{py}-manylinux_2_28_x86_64.whl"


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def index(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A PEP 503 index on 127.0.0.1: torch nightlies of 3 dates (the newest for another
    Python only), torchvision of 2 of them; returns (URL, folder)."""
    root = tmp_path / "index"
    (root / "torch").mkdir(parents=True)
    (root / "torchvision").mkdir()
    torch = [_torch("20261101"), _torch("20261102"), _torch("20261105", py="312"), _torch("20261103")]
    torch += [
        _torch("20261104").replace("manylinux_2_28_x86_64", "win_amd64"),
        _torch("20261106", line="2.16.0"),
    ]
    (root / "torch" / "index.html").write_text(_page(torch))
    (root / "torchvision" / "index.html").write_text(_page([_vision("20261101"), _vision("20261102")]))
    handler = functools.partial(QuietHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", root
    finally:
        server.shutdown()
        server.server_close()


def test_newest_is_the_last_date_with_both_wheels_for_the_python(index) -> None:
    url, _ = index
    # 20261103 has no torchvision, 20261105 is cp312 only, 20261104 no Linux wheel
    assert pin.newest(url, "2.15.0", "0.30.0", "3.11") == "20261102"


def test_a_pinned_date_on_the_index_passes(index) -> None:
    url, _ = index
    assert pin.check(url, "2.15.0", "0.30.0", "20261101", "3.11") == "20261101"


def test_a_date_gone_from_the_index_fails_in_one_line_with_the_fix(index, capsys) -> None:
    url, _ = index
    argv = ["check", "--index", url, "--torch", "2.15.0", "--vision", "0.30.0", "--date", "20260926"]
    assert pin.main(argv) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1
    assert "torch 2.15.0.dev20260926" in err and "the newest there is 20261102" in err
    assert 'TORCH_NIGHTLY_DATE: "20261102"' in err and "nightly_pin.py bump" in err


def test_a_date_without_its_torchvision_fails(index) -> None:
    url, _ = index
    with pytest.raises(pin.PinError, match=r"dev20261103 .* no longer on"):
        pin.check(url, "2.15.0", "0.30.0", "20261103", "3.11")


def test_a_moved_nightly_line_says_so(index) -> None:
    url, _ = index
    with pytest.raises(pin.PinError, match=r"2\.17\.0\.dev wheel .* line has probably moved on"):
        pin.newest(url, "2.17.0", "0.32.0", "3.11")
    with pytest.raises(pin.PinError, match=r"torchvision 0\.31\.0\.dev for those dates"):
        pin.newest(url, "2.16.0", "0.31.0", "3.11")


def test_an_unreachable_index_is_exit_2(capsys) -> None:
    argv = ["newest", "--index", "http://127.0.0.1:9/none", "--torch", "2.15.0", "--vision", "0.30.0"]
    assert pin.main(argv) == 2
    assert "cannot read the nightly index http://127.0.0.1:9/none/torch/" in capsys.readouterr().err


def _matrix_with(tmp_path: Path, url: str, date: str) -> Path:
    text = (ROOT / "matrix.yaml").read_text()
    data = yaml.safe_load(text)
    old = data["builds"]["nightly-current"]
    text = text.replace(old["index_url"], url).replace(
        f'TORCH_NIGHTLY_DATE: "{old["build_args"]["TORCH_NIGHTLY_DATE"]}"', f'TORCH_NIGHTLY_DATE: "{date}"'
    )
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return path


def test_bump_moves_only_a_gone_date_and_keeps_the_rest_of_the_file(index, tmp_path: Path) -> None:
    url, _ = index
    matrix = _matrix_with(tmp_path, url, "20261101")
    before = matrix.read_text()
    assert pin.bump(matrix, "nightly-current", None, if_gone=True) == "20261101"
    assert matrix.read_text() == before  # still on the index: untouched
    matrix = _matrix_with(tmp_path, url, "20260926")
    before = matrix.read_text()
    assert pin.bump(matrix, "nightly-current", None, if_gone=True) == "20261102"
    after = matrix.read_text()
    assert after == before.replace('TORCH_NIGHTLY_DATE: "20260926"', 'TORCH_NIGHTLY_DATE: "20261102"')
    assert (
        yaml.safe_load(after)["builds"]["nightly-current"]["build_args"]["TORCH_NIGHTLY_DATE"] == "20261102"
    )


def test_bump_to_a_given_date_needs_no_index(tmp_path: Path) -> None:
    matrix = _matrix_with(tmp_path, "http://127.0.0.1:9/none", "20260926")
    assert pin.main(["bump", "--matrix", str(matrix), "--date", "20261224"]) == 0
    assert 'TORCH_NIGHTLY_DATE: "20261224"' in matrix.read_text()
    assert pin.main(["bump", "--matrix", str(matrix), "--build", "stable", "--date", "20261224"]) == 2


def test_the_real_matrix_has_a_pin_that_bump_can_find() -> None:
    text = (ROOT / "matrix.yaml").read_text()
    date = yaml.safe_load(text)["builds"]["nightly-current"]["build_args"]["TORCH_NIGHTLY_DATE"]
    assert pin.set_date(text, "nightly-current", date) == text
    assert pin.set_date(text, "nightly-current", "20990101") != text


# --- issue 24: the workflow's check, and a bump that records the nightly's git commit ---------


def test_verify_passes_a_pin_on_the_index_and_names_the_newest_once_it_left(index, tmp_path, capsys) -> None:
    url, _ = index
    assert pin.main(["verify", "--matrix", str(_matrix_with(tmp_path, url, "20261101"))]) == 0
    assert capsys.readouterr().out == "20261101\n"
    gone = _matrix_with(tmp_path, url, "20260926")
    before = gone.read_text()
    assert pin.main(["verify", "--matrix", str(gone)]) == 1
    out, err = capsys.readouterr()
    assert out == "20261102\n"  # the newest, for the pull request the workflow may open
    assert err.startswith("nightly_pin: torch 2.15.0.dev20260926 (with torchvision 0.30.0.dev20260926) is no")
    assert err.count("\n") == 1 and gone.read_text() == before  # one line; the pin does not move


NIGHTLY_BRANCH = [
    {"commit": {"message": f"2026-11-02 nightly release ({'a' * 40})"}},
    {"commit": {"message": "Merge something"}},
    {"commit": {"message": f"2026-11-01 nightly release ({'b' * 40})\n\nmore"}},
]


def test_bump_with_git_sha_records_the_nightlys_commit(tmp_path: Path, monkeypatch) -> None:
    import json

    monkeypatch.setattr(pin, "fetch", lambda url, timeout=60, headers=None: json.dumps(NIGHTLY_BRANCH))
    matrix = _matrix_with(tmp_path, "http://127.0.0.1:9/none", "20260926")
    assert pin.bump(matrix, "nightly-current", "20261101", if_gone=False, with_sha=True) == "20261101"
    args = yaml.safe_load(matrix.read_text())["builds"]["nightly-current"]["build_args"]
    assert args["TORCH_NIGHTLY_DATE"] == "20261101" and args["TORCH_GIT_SHA"] == "b" * 40
    pin.bump(matrix, "nightly-current", "20261102", if_gone=False, with_sha=True)  # moved again: replaced
    args = yaml.safe_load(matrix.read_text())["builds"]["nightly-current"]["build_args"]
    assert args["TORCH_GIT_SHA"] == "a" * 40 and matrix.read_text().count("TORCH_GIT_SHA") == 1
    with pytest.raises(pin.PinError, match="no release of 2026-10-31"):
        pin.git_sha("20261031")
