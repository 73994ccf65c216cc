"""Bounds on what a matrix (and the command line) may ask for, in one place.

Without them a few lines of YAML can hang `plan` before any cell timeout applies (aliases
that expand to billions of nodes), and an absurd or negative value is measured as if it
were a model (`num_hidden_layers: 0` builds a ViT without encoder layers, and its row says
`ok`). The bounds are far above anything the guide's study or a sane custom study needs,
so they only stop mistakes. Standard library only: the loader (`suite.spec.load`), the
command line (`suite.cli.values`) and the child that checks configs against transformers
(`suite.measure.config_check`) all apply these.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from suite.spec.fields import number

# The matrix file: matrix.yaml is about 20 kB and 1,500 nodes (7 levels); PyYAML (pure Python)
# loads 256 kB of such text (23 copies of its models) in about a second of CPU time.
MAX_MATRIX_BYTES = 256 * 1024
MAX_MATRIX_NODES = 100_000  # after aliases are expanded (each use of an alias counts again)
MAX_NESTING = 32  # mappings and lists inside each other; matrix.yaml goes 7 deep
MAX_CELLS = 10_000  # per profile: days of GPU time at a minute per cell

# Settings (matrix.yaml `defaults` / a profile's `settings`, and the same flags).
MAX_BATCH_SIZE = 4096
MAX_ITERATIONS = 100_000  # the guide times 300
MAX_WARMUP = 10_000
MAX_PROCESSES = 32  # worker processes per cell (pooled: 3 is the order of what is useful, docs/intervals.md)
MAX_TIMEOUT_S = 7 * 24 * 3600.0  # a week per cell
MAX_TOLERANCE = 1.0  # relative; above it the accuracy check passes anything
MAX_PARAMS_M = 1e6  # a published size in millions: a trillion parameters

# Config and processor fields whose names say they count or size something (layers, heads,
# widths, classes, queries, ...), and the image sides of processors and configs.
MAX_COUNT = 1 << 20  # above every width, vocabulary and class count of the hub's vision models
MAX_IMAGE_SIDE = 16384  # pixels
_COUNT_NAME = re.compile(
    r"^(num_\w+|\w+_(layers|heads|size|sizes|dim|dims|depth|depths|channels|embeddings|queries)"
    r"|depths|d_model|dim_feedforward)$"
)
_SIDE_NAME = re.compile(r"^(image_size|height|width|shortest_edge|longest_edge|crop_size|size)$")
# A normalisation's epsilon (`layer_norm_eps`, `batch_norm_eps`): added to a variance before its
# square root, so a negative one gives NaN or infinite outputs, and 1 or more is not a small one.
_EPS_NAME = re.compile(r"^(eps|\w+_eps)$")


def setting_bounds(name: str) -> tuple[float, float]:
    """(lowest, highest) allowed value of a numeric setting (iterations, warmup, ...)."""
    return {
        "iterations": (2, MAX_ITERATIONS),
        "min_iterations": (2, MAX_ITERATIONS),
        "processes": (1, MAX_PROCESSES),
        "ci_target_pct": (0, 100.0),
        "max_timing_s": (0, MAX_TIMEOUT_S),
        "warmup": (0, MAX_WARMUP),
        "timeout_s": (0, MAX_TIMEOUT_S),
        "tolerance": (0, MAX_TOLERANCE),
        "batch_size": (1, MAX_BATCH_SIZE),
    }[name]


def _bounds(key: str) -> tuple[int, int] | None:
    if _SIDE_NAME.match(key):
        return 1, MAX_IMAGE_SIDE
    if _COUNT_NAME.match(key):
        return 1, MAX_COUNT
    return None


def _numbers(value: object) -> list[float]:
    """The numbers of a value: itself, or the items of a list (depths: [2, 2, 6, 2]).
    Booleans and text are left to the type checks."""
    items = value if isinstance(value, list) else [value]
    return [x for x in items if isinstance(x, (int, float)) and not isinstance(x, bool)]


def too_big(key: str, value: object) -> str:
    """Why `value` is too large for the field `key` ("" if it is not, or the rule does not
    know the field). Needs no defaults, so the loader applies it to every config."""
    bounds = _bounds(key)
    if bounds is None:
        return ""
    for x in _numbers(value):
        if x > bounds[1]:
            return f"must be at most {bounds[1]}, got {number(x)}"
    return ""


def too_small(key: str, value: object, default: object = None) -> str:
    """Why `value` is too small for the field `key` ("" if it is not). A count or a size
    must be >= 1, unless the field's own default (when known) is 0 or negative: then the
    class uses that value for "none" (`num_register_tokens: 0`, `window_size: 0`)."""
    bounds = _bounds(key)
    if bounds is None:
        return ""
    low = bounds[0]
    if isinstance(default, int) and not isinstance(default, bool) and default < low:
        low = default
    for x in _numbers(value):
        if x < low:
            return f"must be >= {low} (it counts or sizes something), got {number(x)}"
    return ""


def bad_epsilon(key: str, value: object) -> str:
    """Why `value` is not a normalisation epsilon for the field `key` ("" if it is one, or
    the field is not an epsilon)."""
    if not _EPS_NAME.match(key):
        return ""
    for x in _numbers(value):
        if not 0 <= x < 1:
            return f"must be at least 0 and below 1 (a normalisation's epsilon), got {number(x)}"
    return ""


def range_problems(
    values: Mapping[str, object], defaults: Mapping[str, object] | None = None, lower: bool = True
) -> list[tuple[str, str]]:
    """(dotted field path, problem) for each count or size in `values` (nested mappings:
    sub-configs, processor sizes) out of range. `defaults`: the class's own values where
    known (see `too_small`); `lower=False` checks the upper bounds only (the loader, for
    configs, whose defaults only transformers knows)."""
    out: list[tuple[str, str]] = []
    for key, value in values.items():
        default = defaults.get(key) if isinstance(defaults, Mapping) else None
        if isinstance(value, Mapping):
            sub = default if isinstance(default, Mapping) else None
            out += [(f"{key}.{path}", problem) for path, problem in range_problems(value, sub, lower)]
            continue
        problem = too_big(str(key), value) or bad_epsilon(str(key), value)
        problem = problem or (too_small(str(key), value, default) if lower else "")
        if problem:
            out.append((str(key), problem))
    return out


# Attention splits a width into heads: (width field, heads field) pairs. transformers 4.x
# (the stable images' 4.31) refuses to build the guide's families (ViT, BEiT, CLIP/OwlViT,
# DETR, SegFormer, Swin, Mask2Former/MaskFormer) when the heads do not divide the width;
# 5.x builds ViT-style attention heads x (width // heads) wide, narrower than the model.
# Either way it is not the model the matrix describes, nor the same one in every build, so
# the rule holds under every transformers. Lists pair up stage by stage; Swin's `embed_dim`
# doubles at each stage. A config that sets `head_dim` itself does not split its width.
WIDTH_HEADS: tuple[tuple[str, str], ...] = (
    ("hidden_size", "num_attention_heads"),
    ("hidden_sizes", "num_attention_heads"),
    ("hidden_dim", "num_attention_heads"),
    ("d_model", "encoder_attention_heads"),
    ("d_model", "decoder_attention_heads"),
    ("embed_dim", "num_heads"),
)


def _stage_pairs(width: object, heads: object) -> list[tuple[int, int]]:
    ints = (int,)
    if isinstance(width, ints) and isinstance(heads, ints):
        return [(width, heads)]
    if isinstance(width, list) and isinstance(heads, list) and len(width) == len(heads):
        return [
            (w, h) for w, h in zip(width, heads, strict=True) if isinstance(w, ints) and isinstance(h, ints)
        ]
    if isinstance(width, ints) and isinstance(heads, list):  # Swin: stage i is embed_dim * 2**i wide
        return [(width * 2**i, h) for i, h in enumerate(heads) if isinstance(h, ints)]
    return []


def head_problems(config: Mapping[str, object], path: str = "") -> list[tuple[str, str, str]]:
    """(dotted heads field, dotted width field, problem) wherever a width does not split
    into its heads, in a config's plain data (`to_dict()`) and its sub-configs."""
    out: list[tuple[str, str, str]] = []
    if "head_dim" not in config:
        for width_key, heads_key in WIDTH_HEADS:
            width, heads = config.get(width_key), config.get(heads_key)
            for w, h in _stage_pairs(width, heads):
                if h > 0 and w % h:
                    problem = f"{heads} heads do not divide {width_key} {width} ({w} / {h})"
                    out.append((f"{path}{heads_key}", f"{path}{width_key}", problem))
                    break
    for key, value in config.items():
        if isinstance(value, Mapping):
            out += head_problems(value, f"{path}{key}.")
    return out
