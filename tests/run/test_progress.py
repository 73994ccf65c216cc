"""The runner's ETA: the cost model's estimate of the cells left, calibrated on this machine."""

from __future__ import annotations

import io
import re
from pathlib import Path

from suite.run.progress import Progress
from suite.spec import expand, load_matrix
from suite.spec.cost import estimate_seconds

GUIDE = Path(__file__).resolve().parents[1] / "data" / "guide-matrix.yaml"


def test_eta_scales_the_estimates_left_by_the_measured_pace() -> None:
    cells = expand(load_matrix(GUIDE), "autotune", "nightly")[:3]  # ViT bs1: eager, default, max-autotune
    stream = io.StringIO()
    progress = Progress(total=3, estimate_left=sum(map(estimate_seconds, cells)), stream=stream)
    progress.finish(cells[0], {"status": "error", "error": "x"}, wall=2 * estimate_seconds(cells[0]))
    eta = re.search(r"ETA (\d+):(\d\d):(\d\d)", stream.getvalue())
    assert eta is not None
    seconds = int(eta[1]) * 3600 + int(eta[2]) * 60 + int(eta[3])
    want = 2 * (estimate_seconds(cells[1]) + estimate_seconds(cells[2]))
    assert abs(seconds - want) <= 1
    progress.skip(cells[1], "ok")
    progress.finish(cells[2], {"status": "error", "error": "x"}, wall=1.0)
    assert stream.getvalue().rstrip().endswith("ETA 0:00:00")
