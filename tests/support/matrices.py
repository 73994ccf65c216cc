"""The matrices the tests write inline (each test file's own, kept here with the rest of what
the tests share); tests/data/ holds those read as files."""

from __future__ import annotations

from typing import Any

import yaml

# What the inline matrices share (their line numbers matter to the tests that name lines: each
# part keeps its lines): the version and the photograph every cell feeds (checked), a build, and
# the models they are made of.
HEAD = """\
version: 1
defaults:
  image: {path: suite/assets/chelsea-640x480.jpg}
"""
STABLE_BUILD = """\
builds:
  stable: {kind: stable, python: "3.10", torch: "2.0.1"}
"""
ANY_BUILD = """\
builds:
  any: {kind: release, python: "3.11", torch: "0.0.0"}
"""
VIT = """\
  ViT:
    task: Image Classification
    id: google/vit-base-patch16-224
    model_type: vit
    config: {num_labels: 1000}
"""


def tiny_vit(name: str = "TinyViT", layers: int = 2) -> str:
    """A ViT of 32 pixels and width 32 (random weights: no hub), as one `models:` entry."""
    return f"""\
  {name}:
    task: Image Classification
    model_type: vit
    config: {{hidden_size: 32, num_hidden_layers: {layers}, num_attention_heads: 2, intermediate_size: 64,
             image_size: 32, patch_size: 8, num_labels: 10}}
    processor: {{class: ViTImageProcessor, size: {{height: 32, width: 32}}}}
"""


# tests/spec/test_spec_load.py: the smallest valid matrix, one build, one model, one profile
LOAD_MINIMAL = f"""
{HEAD}{STABLE_BUILD}models:
{VIT}profiles:
  smoke:
    settings: {{weights: random, shrink: true, iterations: 5}}
    select:
      - {{models: all, batch_sizes: [1], modes: [eager, default]}}
"""

# tests/spec/test_scenarios_custom.py: custom configurations beside their base
CUSTOM = f"""
{HEAD}{STABLE_BUILD}models:
{VIT}    processor: {{class: ViTImageProcessor, size: {{height: 224, width: 224}}}}
    smoke:
      config: {{hidden_size: 64, num_hidden_layers: 2, num_attention_heads: 2, intermediate_size: 128,
               image_size: 64}}
      processor: {{size: {{height: 64, width: 64}}}}
  HubOnly:
    task: Image Classification
    id: someone/some-model
custom:
  vit-6-layers: {{base: ViT, num_hidden_layers: 6}}
  vit-384:
    base: ViT
    image_size: 384
    processor: {{size: {{height: 384, width: 384}}}}
profiles:
  full:
    select:
      - {{models: all, batch_sizes: [1, 4], modes: [eager, default]}}
  smoke:
    settings: {{weights: random, shrink: true, iterations: 5}}
    select:
      - {{models: [ViT], batch_sizes: [1], modes: [eager, default]}}
  both:
    settings: {{weights: random}}
    select:
      - {{models: [ViT], batch_sizes: [1], modes: [eager], scenarios: [inference, train]}}
  custom:
    select:
      - {{models: [ViT, vit-6-layers], batch_sizes: [1], modes: [eager]}}
"""

# tests/spec/test_spec_limits.py: a tiny valid matrix the bounds tests grow
LIMITS_BASE = f"""\
{HEAD}{ANY_BUILD}models:
{tiny_vit()}custom:
  Nest:
    base: TinyViT
    num_hidden_layers: 1
profiles:
  tiny:
    settings: {{weights: random, iterations: 5, warmup: 1, timeout_s: 120}}
    select:
      - {{models: [TinyViT, Nest], batch_sizes: [1], modes: [eager]}}
"""

# tests/run/test_cell_path.py: one tiny model, compile cost and dynamic batch sizes on
COMPILE_COST = {
    "version": 1,
    "defaults": {"image": {"path": "suite/assets/chelsea-640x480.jpg"}},
    "builds": {"any": {"kind": "release", "python": "3.11", "torch": "0.0.0"}},
    "models": {
        "TinyViT": {
            "task": "Image Classification",
            "model_type": "vit",
            "config": {"hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2},
        }
    },
    "profiles": {
        "p": {
            "settings": {"weights": "random", "compile_cost": True, "dynamic_batch_sizes": [1, 4, 16]},
            "select": [{"models": "all", "batch_sizes": [1], "modes": ["eager", "default"]}],
        }
    },
}

# tests/cli/test_fuzz.py: the valid matrix every fuzzed one is mutated from
FUZZ_VALID: dict[str, Any] = yaml.safe_load(
    """
version: 1
defaults:
  dtype: float32
  weights: pretrained
  warmup: 2
  iterations: 10
  timeout_s: 60
  tolerance: 0.001
  shrink: false
  compile_cache: cold
  image: {url: "http://example.invalid/cat.jpg", path: suite/assets/chelsea-640x480.jpg}
builds:
  stable:
    {kind: stable, python: "3.10", torch: "2.0.1", cuda: "11.8", container: containers/stable,
     pins: ["torch==2.0.1"], description: old, build_args: {TORCH_NIGHTLY_DATE: "20260901",
     BASE_IMAGE: "ubuntu:22.04@sha256:b8b6ee6aa931ecd9d0d952abc34dc0e5f7c6a30c6bb71b079fe399fde0329c02"}}
  current: {kind: release, python: "3.11", torch: "2.13.0"}
models:
  ViT:
    task: Image Classification
    id: google/vit-base-patch16-224
    model_type: vit
    class: AutoModelForImageClassification
    params_m: 86.57
    config: {num_labels: 1000}
    processor: {class: ViTImageProcessor, size: {height: 224, width: 224}}
    smoke:
      config: {hidden_size: 64, num_attention_heads: 2}  # heads divide the width (checked)
      processor: {size: {height: 64, width: 64}}
  OwlViT:
    task: Object Detection
    id: google/owlvit-base-patch32
    model_type: owlvit
    revision: main
    text_queries: ["a cat", "a remote"]
custom:
  ViT-wide: {base: ViT, hidden_size: 1024, num_attention_heads: 16}
profiles:
  smoke:
    description: quick
    settings: {weights: random, shrink: true, iterations: 5}
    select:
      - {models: all, batch_sizes: [1], modes: [eager, default]}
      - {models: [ViT-wide], batch_sizes: [1, 4], modes: [reduce-overhead], scenarios: [inference]}
  full:
    select:
      - {models: [ViT, OwlViT], batch_sizes: [1, 4, 16], modes: [eager, default, reduce-overhead]}
"""
)
