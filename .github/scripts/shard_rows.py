"""A shard's rows across a job's attempts and uploads, for .github/workflows/bench-nightly.yml.

Every upload of a bench job is an artifact of its own, never a replacement: the job's final
one, `<artifact>-attempt-<a>`, and the ones it makes while it runs, `<artifact>-attempt-<a>-
rows-<n>` (the raw and superseded CSVs once `n` rows are recorded; `upload-rows` below). So no
upload can put fewer rows in place of more. A re-run of the job (any attempt) first downloads
every earlier upload of its shard and `restore`s their rows into the run folder, so the suite's
resume skips the cells already recorded; the merge job `gather`s every upload of every job.
In both, the rows of one CSV name from several uploads are joined: the header once, each row
once (a later upload repeats an earlier one's rows), in the order the uploads were made; the
suite's own rule then keeps one row per cell (an ok row, else the latest).

Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import re
import sys
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROW_FOLDERS = ("raw", "superseded")  # what an upload made while the job runs holds
# beside the rows: the night the run resolved (suite.sessions.nightly), which a re-run keeps
RUN_FILES = ("manifest.json",)
_ORDER = re.compile(r"-attempt-(\d+)(?:-rows-(\d+))?$")
RESULTS_SERVICE = "twirp/github.actions.results.api.v1.ArtifactService"


class Problem(ValueError):
    """One line for the job's log."""


def upload_order(name: str) -> tuple[int, int]:
    """(attempt, rows) of an upload's name; the final upload of an attempt sorts after its parts."""
    match = _ORDER.search(name)
    if match is None:
        return (0, 0)
    return (int(match[1]), int(match[2]) if match[2] is not None else sys.maxsize)


def csv_lines(path: Path) -> tuple[str, list[str]]:
    """(header, complete rows) of a raw CSV; a torn last line (no newline: a kill mid-write) is
    left out, as the suite's resume cuts it."""
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    if not lines:
        return "", []
    rows = [ln for ln in lines[1:] if ln.endswith("\n")]
    return lines[0], rows


def join(files: Sequence[Path]) -> tuple[str, list[str]]:
    """The header and the rows of several copies of one CSV, each row once, in order."""
    header, rows, seen = "", [], set()
    for path in files:
        head, body = csv_lines(path)
        if not head:
            continue
        if header and head != header:
            raise Problem(f"{path}: its columns differ from {files[0]}'s (another suite version)")
        header = header or head
        for row in body:
            if row not in seen:
                seen.add(row)
                rows.append(row)
    return header, rows


def write_joined(target: Path, files: Sequence[Path]) -> int:
    header, rows = join(files)
    if not header:
        return 0
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(header + "".join(rows), encoding="utf-8")
    return len(rows)


def uploads(artifacts: Path, prefix: str) -> list[Path]:
    """The downloaded uploads of one job (`<prefix>-attempt-...`), in the order they were made."""
    found = [p for p in artifacts.glob(f"{prefix}-attempt-*") if p.is_dir()]
    return sorted(found, key=lambda p: upload_order(p.name))


def restore(artifacts: Path, run_dir: Path, prefix: str) -> list[str]:
    """Put every earlier upload's rows of this job into run_dir (raw/ and superseded/); lines
    for the log. A row the run folder already holds is kept once."""
    made = uploads(artifacts, prefix)
    lines = []
    for folder in ROW_FOLDERS:
        names = sorted({f.name for u in made for f in (u / folder).glob("*.csv")})
        for name in names:
            target = run_dir / folder / name
            copies = [u / folder / name for u in made if (u / folder / name).is_file()]
            rows = write_joined(target, [*([target] if target.is_file() else []), *copies])
            lines.append(f"{folder}/{name}: {rows} row(s) from {len(copies)} earlier upload(s)")
    lines += restore_run_files(made, run_dir)
    return lines or [f"no earlier upload of {prefix}: the shard starts from nothing"]


def restore_run_files(made: Sequence[Path], run_dir: Path) -> list[str]:
    """The run's own files (its manifest: the night it measured) from the first upload that has
    them, where the run folder lacks them: a re-run then keeps the run's night."""
    lines = []
    for name in RUN_FILES:
        target = run_dir / name
        first = next((u / name for u in made if (u / name).is_file()), None)
        if first is None or target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(first.read_bytes())
        lines.append(f"{name}: from {first.parent.name}")
    return lines


def gather(artifacts: Path, run_dir: Path, prefixes: Sequence[str]) -> dict[str, list[str]]:
    """Every job's rows into run_dir/raw/: the uploads of one job joined per CSV name; two jobs
    with one CSV name (two label sets of one GPU model) are refused. Job prefix -> its CSVs."""
    origin: dict[str, str] = {}
    delivered: dict[str, list[str]] = {}
    for prefix in prefixes:
        made = uploads(artifacts, prefix)
        names = sorted({f.name for u in made for f in (u / "raw").glob("*.csv")})
        for name in names:
            if name in origin:
                raise Problem(
                    f"{name} comes from both {origin[name]} and {prefix}: two label sets ran on the "
                    "same GPU model; list each GPU type once in gpu_labels"
                )
            origin[name] = prefix
            copies = [u / "raw" / name for u in made if (u / "raw" / name).is_file()]
            write_joined(run_dir / "raw" / name, copies)
        delivered[prefix] = names
    return delivered


# --- uploads while the job runs ---------------------------------------------------------------


def rows_recorded(run_dir: Path) -> int:
    """Complete rows in the run folder's raw and superseded CSVs (they only grow during a run)."""
    files = [p for folder in ROW_FOLDERS for p in sorted((run_dir / folder).glob("*.csv"))]
    return sum(len(csv_lines(p)[1]) for p in files)


def snapshot(run_dir: Path) -> bytes:
    """A zip of the run folder's raw and superseded CSVs and its manifest, paths relative to it."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for folder in ROW_FOLDERS:
            for path in sorted((run_dir / folder).glob("*.csv")):
                archive.write(path, f"{folder}/{path.name}")
        for name in RUN_FILES:
            if (run_dir / name).is_file():
                archive.write(run_dir / name, name)
    return buffer.getvalue()


@dataclass(frozen=True)
class Runtime:
    """What the Actions runtime gives an action to store artifacts with (ACTIONS_RUNTIME_TOKEN,
    ACTIONS_RESULTS_URL), handed to this script in a file only the runner user reads."""

    token: str
    results_url: str

    @staticmethod
    def load(path: Path) -> Runtime:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Runtime(str(data["token"]), str(data["results_url"]))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise Problem(f"{path}: no Actions runtime to upload with ({exc})") from None

    def backend_ids(self) -> tuple[str, str]:
        """The workflow run's and the job's IDs in the results service, from the token's scopes
        (`Actions.Results:<run>:<job>`), as @actions/artifact reads them."""
        try:
            payload = self.token.split(".")[1]
            claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        except (IndexError, ValueError) as exc:
            raise Problem(f"the Actions runtime token is not a JWT ({exc})") from None
        for scope in str(claims.get("scp", "")).split(" "):
            parts = scope.split(":")
            if len(parts) == 3 and parts[0] == "Actions.Results":
                return parts[1], parts[2]
        raise Problem("the Actions runtime token has no Actions.Results scope")


Post = Callable[[str, bytes, dict[str, str], str], bytes]  # (url, body, headers, method) -> body


def http(url: str, body: bytes, headers: dict[str, str], method: str = "POST") -> bytes:
    request = urllib.request.Request(url, data=body, headers=headers, method=method)
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.read()
    except urllib.error.HTTPError as exc:
        raise Problem(f"{method} {url.split('?')[0]}: HTTP {exc.code} {exc.reason}") from None
    except (OSError, ValueError) as exc:
        raise Problem(f"{method} {url.split('?')[0]}: {exc}") from None


def upload(runtime: Runtime, name: str, content: bytes, post: Post = http) -> str:
    """Store `content` (a zip) as the artifact `name` of this job, as actions/upload-artifact
    does (artifacts v4: create, put the blob, finalize); the artifact's ID."""
    run_id, job_id = runtime.backend_ids()
    base = runtime.results_url.rstrip("/") + "/" + RESULTS_SERVICE
    headers = {"Authorization": f"Bearer {runtime.token}", "Content-Type": "application/json"}
    ids = {"workflow_run_backend_id": run_id, "workflow_job_run_backend_id": job_id, "name": name}
    body = json.dumps({**ids, "version": 4}).encode()
    created = json.loads(post(f"{base}/CreateArtifact", body, headers, "POST"))
    if not created.get("ok") or not created.get("signed_upload_url"):
        raise Problem(f"CreateArtifact {name}: refused ({created})")
    post(created["signed_upload_url"], content, {"x-ms-blob-type": "BlockBlob", "Content-Type": "zip"}, "PUT")
    digest = hashlib.sha256(content).hexdigest()
    done = {**ids, "size": str(len(content)), "hash": f"sha256:{digest}"}
    finalized = json.loads(post(f"{base}/FinalizeArtifact", json.dumps(done).encode(), headers, "POST"))
    if not finalized.get("ok"):
        raise Problem(f"FinalizeArtifact {name}: refused ({finalized})")
    return str(finalized.get("artifact_id", ""))


@dataclass
class Uploader:
    """Uploads the run folder's rows as they grow: after every `every_rows` new rows, and after
    `every_s` seconds with at least one; each upload a new artifact named for its row count."""

    run_dir: Path
    prefix: str  # <artifact>-attempt-<a>
    send: Callable[[str, bytes], object]
    every_rows: int = 3
    every_s: float = 600.0
    sent_rows: int = 0
    sent_at: float | None = None  # the last upload (or the first look): the clock of every_s

    def due(self, rows: int, now: float) -> bool:
        if self.sent_at is None:
            self.sent_at = now
        new = rows - self.sent_rows
        return new >= self.every_rows or (new > 0 and now - self.sent_at >= self.every_s)

    def tick(self, now: float, final: bool = False) -> str | None:
        """Upload if due (or, `final`, if anything is new); the artifact's name, or None."""
        rows = rows_recorded(self.run_dir)
        if not (self.due(rows, now) or (final and rows > self.sent_rows)):
            return None
        name = f"{self.prefix}-rows-{rows:05d}"
        self.send(name, snapshot(self.run_dir))
        self.sent_rows, self.sent_at = rows, now
        return name


def watch(uploader: Uploader, stop: Path, poll_s: float = 20.0, log: Callable[[str], None] = print) -> None:
    """Tick until `stop` exists, then a last time; an upload that fails is a warning, and the
    next tick tries again (the job's final upload still carries everything)."""
    while True:
        final = stop.exists()
        try:
            name = uploader.tick(time.monotonic(), final=final)
            if name:
                log(f"uploaded {name}")
        except Problem as exc:
            log(f"::warning::rows not uploaded this time: {exc}")
        if final:
            return
        time.sleep(poll_s)


def main(argv: Iterable[str]) -> int:
    args = list(argv)
    try:
        if len(args) == 4 and args[0] == "restore":
            for line in restore(Path(args[1]), Path(args[2]), args[3]):
                print(line)
        elif len(args) == 5 and args[0] == "upload-rows":
            runtime = Runtime.load(Path(args[3]))
            run_dir, prefix, stop = Path(args[1]), args[2], Path(args[4])
            uploader = Uploader(run_dir, prefix, lambda name, data: upload(runtime, name, data))
            watch(uploader, stop)
        else:
            print(
                "usage: shard_rows.py restore ARTIFACTS RUN_DIR PREFIX | "
                "upload-rows RUN_DIR PREFIX RUNTIME_JSON STOP_FILE",
                file=sys.stderr,
            )
            return 2
    except Problem as exc:
        print(f"::error::{exc}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
