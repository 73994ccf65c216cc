"""The pages' tests' run and reader (tests/report/test_pages.py, test_pages_browser.py): a sample run with
everything a run page must show, and the data a page embeds."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tools.pages.sample import A100, SampleRun

T4 = "Tesla T4"
MODELS = (("Image Classification", "ViT"), ("Object Detection", "DETR"), ("Image Segmentation", "Segformer"))
# a run with everything that must show: failures of each kind, a suspect (busy) cell, a compiled
# output that failed its accuracy check, and the nightly build missing on the T4
TROUBLED = SampleRun(
    gpus=(A100, T4),
    models=MODELS,
    batch_sizes=(1, 4),
    modes=("eager", "default", "reduce-overhead"),
    failed={
        ("stable", A100, "DETR", 4, "default"): "oom",
        ("nightly", A100, "ViT", 1, "reduce-overhead"): "error",
        ("stable", T4, "Segformer", 1, "eager"): "timeout",
    },
    unhealthy={("nightly", A100, "DETR", 1, "default"): "busy,steal"},
    accuracy_failed=frozenset({("stable", A100, "Segformer", 4, "reduce-overhead")}),
    absent=frozenset({("nightly", T4)}),
)


def page_data(page: Path) -> dict:
    text = page.read_text(encoding="utf-8")
    match = re.search(r'<script id="page-data" type="application/json">(.*?)</script>', text, re.S)
    assert match, "the page holds its data"
    return json.loads(match.group(1))
