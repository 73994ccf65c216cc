"""containers/nightly_pin.py against a fake nightly index served on the loopback."""

from __future__ import annotations

import functools
import http.server
import importlib.util
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
import yaml
from support.nightly_index import Night, build_index, serve, wheel_name

ROOT = Path(__file__).resolve().parents[2]


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


def _matrix_with(tmp_path: Path, url: str, date: str = "newest") -> Path:
    text = (ROOT / "matrix.yaml").read_text()
    data = yaml.safe_load(text)
    old = data["builds"]["nightly-current"]
    text = text.replace(old["index_url"], url).replace(
        f'TORCH_NIGHTLY_DATE: "{old["build_args"]["TORCH_NIGHTLY_DATE"]}"', f'TORCH_NIGHTLY_DATE: "{date}"'
    )
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    return path


def test_the_real_matrix_follows_the_newest_night_and_bump_can_pin_it() -> None:
    text = (ROOT / "matrix.yaml").read_text()
    date = yaml.safe_load(text)["builds"]["nightly-current"]["build_args"]["TORCH_NIGHTLY_DATE"]
    assert date == "newest"  # the default never needs a pull request to move
    assert pin.set_date(text, "nightly-current", date) == text.replace('"newest"', '"newest"')
    assert 'TORCH_NIGHTLY_DATE: "20990101"' in pin.set_date(text, "nightly-current", "20990101")


# --- resolve: tonight's wheels, on a local index of three nights --------------------------

THREE_NIGHTS = [
    Night("20261124", git="c" * 40),
    Night("20261125", git="d" * 40, fragment=False),  # no #sha256=: downloaded and hashed
    Night("20261126", vision=""),  # tonight's torch, its torchvision not there yet
]


@pytest.fixture
def nights(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    hashes = build_index(tmp_path / "nights", THREE_NIGHTS)
    with serve(tmp_path / "nights") as url:
        yield url, hashes


def test_resolve_picks_the_newest_complete_night_with_its_hashes_and_commit(nights, tmp_path, capsys) -> None:
    url, hashes = nights
    matrix = _matrix_with(tmp_path, "http://127.0.0.1:9/not-this-one")
    assert pin.main(["resolve", "--build", "nightly-current", "--matrix", str(matrix), "--index", url]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object, one line
    found = json.loads(out)
    torch_file = wheel_name("torch", "2.16.0.dev20261125+cu130")
    vision_file = wheel_name("torchvision", "0.31.0.dev20261125+cu130")
    assert found["date"] == "20261125"  # 20261126 has no torchvision yet
    assert found["torch"] == "2.16.0.dev20261125+cu130"
    assert found["torchvision"] == "0.31.0.dev20261125+cu130"
    assert found["torch_url"] == f"{url}/files/{torch_file.replace('+', '%2B')}"
    assert found["torch_sha256"] == hashes[torch_file]  # the page gave none: downloaded and hashed
    assert found["torchvision_sha256"] == hashes[vision_file]
    assert found["git_sha"] == "d" * 40 and found["triton"] == "pytorch-triton==3.6.0+git1234abcd"
    assert found["index"] == url and found["python"] == "3.11"


def test_resolve_reads_the_commit_through_range_requests_or_leaves_it_empty(tmp_path) -> None:
    hashes = build_index(tmp_path / "i", THREE_NIGHTS)
    with serve(tmp_path / "i") as url:
        found = pin.resolve(url, "3.11", "20261124")
    assert (
        found["git_sha"] == "c" * 40
        and found["torch_sha256"] == hashes[wheel_name("torch", "2.16.0.dev20261124+cu130")]
    )
    with serve(tmp_path / "i", ranges=False) as url:  # a server without ranges: not guessed
        found = pin.resolve(url, "3.11", "20261124")
    assert found["git_sha"] == "" and found["triton"] == "" and found["date"] == "20261124"


def test_the_index_is_the_flag_else_the_variable_else_the_matrix(nights, tmp_path, monkeypatch) -> None:
    url, _ = nights
    matrix = _matrix_with(tmp_path, url)
    assert pin.index_of("nightly-current", matrix, None) == (url, "3.11")
    monkeypatch.setenv("SUITE_NIGHTLY_INDEX", "http://127.0.0.1:9/mirror")
    assert pin.index_of("nightly-current", matrix, None)[0] == "http://127.0.0.1:9/mirror"
    assert pin.index_of("nightly-current", matrix, "http://127.0.0.1:9/flag")[0] == "http://127.0.0.1:9/flag"
    with pytest.raises(pin.PinError, match=r"builds\.nope"):
        pin.index_of("nope", matrix, None)


def test_a_pinned_date_resolves_and_a_gone_one_fails_in_one_line(nights, tmp_path, capsys) -> None:
    url, _ = nights
    matrix = str(_matrix_with(tmp_path, url))
    assert pin.main(["resolve", "--build", "nightly-current", "--matrix", matrix, "--date", "20261124"]) == 0
    assert json.loads(capsys.readouterr().out)["date"] == "20261124"
    assert pin.main(["resolve", "--build", "nightly-current", "--matrix", matrix, "--date", "20260901"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert "nightly of 20260901 is no longer on" in err and "newest complete night there is 20261125" in err
    assert pin.main(["resolve", "--build", "nightly-current", "--matrix", matrix, "--date", "20261126"]) == 1
    assert "20261126 has torch but no torchvision" in capsys.readouterr().err
    assert pin.main(["resolve", "--build", "nightly-current", "--matrix", matrix, "--date", "tonight"]) == 2


def test_the_line_comes_from_the_index_not_the_matrix(tmp_path) -> None:
    # a branch cut: two lines on the newest night; another Python's and platform's wheels ignored
    old, new = {"line": "3.0.0", "vision": "0.40.0"}, {"line": "3.1.0", "vision": "0.41.0"}
    nights = [Night("20270301", **old), Night("20270302", **old), Night("20270302", **new)]
    build_index(tmp_path / "i", nights)
    build_index(tmp_path / "i2", [Night("20270303", line="3.1.0")], python="312")
    for name in ("torch", "torchvision"):  # the cp312 night joins the same pages
        extra = (tmp_path / "i2" / name / "index.html").read_text().split("<body>\n")[1].split("\n</body>")[0]
        page = tmp_path / "i" / name / "index.html"
        extra = extra.replace("../files/", "../files2/")
        page.write_text(page.read_text().replace("</body>", extra + "\n</body>"))
    (tmp_path / "i2" / "files").rename(tmp_path / "i" / "files2")
    with serve(tmp_path / "i") as url:
        found = pin.resolve(url, "3.11")
        assert (found["date"], found["torch"], found["torchvision"]) == (
            "20270302",
            "3.1.0.dev20270302+cu130",
            "0.41.0.dev20270302+cu130",
        )
        assert pin.resolve(url, "3.12")["date"] == "20270303"
    # a free-threaded build (cp311t) is another interpreter: never tonight's wheel for 3.11
    assert (
        pin.WHEEL.fullmatch(
            wheel_name("torch", "3.1.0.dev20270304+cu130").replace("cp311-cp311", "cp311-cp311t")
        )
        is None
    )


def test_an_index_without_a_complete_night_says_so(tmp_path) -> None:
    build_index(tmp_path / "i", [Night("20261126", vision="")])
    with serve(tmp_path / "i") as url, pytest.raises(pin.PinError, match="no torchvision nightly"):
        pin.resolve(url, "3.11")


def test_bump_pins_a_night_that_is_on_the_index(nights, tmp_path: Path) -> None:
    url, _ = nights
    matrix = _matrix_with(tmp_path, url)
    before = matrix.read_text()
    assert pin.main(["bump", "--matrix", str(matrix), "--git-sha"]) == 0
    after = matrix.read_text()
    args = yaml.safe_load(after)["builds"]["nightly-current"]["build_args"]
    assert args["TORCH_NIGHTLY_DATE"] == "20261125" and args["TORCH_GIT_SHA"] == "d" * 40
    sha_line = f'\n      TORCH_GIT_SHA: "{"d" * 40}"'
    assert after.replace('"20261125"', '"newest"').replace(sha_line, "") == before
    assert pin.main(["bump", "--matrix", str(matrix), "--date", "20260901"]) == 1
    assert pin.main(["bump", "--matrix", str(matrix), "--build", "stable", "--date", "20261124"]) == 2


NIGHTLY_BRANCH = [
    {"commit": {"message": f"2026-11-02 nightly release ({'a' * 40})"}},
    {"commit": {"message": "Merge something"}},
    {"commit": {"message": f"2026-11-01 nightly release ({'b' * 40})\n\nmore"}},
]


def test_git_sha_reads_the_nightly_branch(monkeypatch) -> None:
    monkeypatch.setattr(pin, "fetch", lambda url, timeout=60, headers=None: json.dumps(NIGHTLY_BRANCH))
    assert pin.git_sha("20261101") == "b" * 40 and pin.git_sha("20261102") == "a" * 40
    with pytest.raises(pin.PinError, match="no release of 2026-10-31"):
        pin.git_sha("20261031")
