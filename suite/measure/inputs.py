"""The input batch: one real photograph, preprocessed by the model's processor, repeated.

The guide's image (COCO val2017 #39769, 640x480, two cats) is downloaded once and
cached. Offline (random weights, or no network), the repo's own photograph is used:
a CC0 cat photo (scikit-image's "chelsea") cut to the same 640x480, so every processor
produces the same tensor shapes as with the guide's image.
"""

from __future__ import annotations

import hashlib
import os
import warnings
import zlib
from pathlib import Path
from typing import Any

from suite.spec.settings import ImageSpec

REPO_ROOT = Path(__file__).resolve().parents[2]  # matrix.yaml and suite/ sit here
CLIP_TEXT_LENGTH = 16  # OwlViTProcessor pads every query to 16 tokens (max_length)


def cache_dir() -> Path:
    root = os.environ.get("SUITE_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "torch-compile-suite"
    )
    return Path(root)


def _resolve_local(path: str) -> Path:
    p = Path(path)
    if not p.is_absolute() and not p.exists():
        # relative to the repository (matrix.yaml sits next to suite/)
        p = REPO_ROOT / path
    return p


def is_offline(weights: str) -> bool:
    """Whether a cell runs without the network: random weights need no hub, and
    HF_HUB_OFFLINE=1 forbids it; the local image then feeds the model."""
    return weights == "random" or os.environ.get("HF_HUB_OFFLINE") == "1"


def image_problem(path: str) -> str:
    """Why the local image `path` cannot feed the cells ("" if it can): no such file, or
    nothing pillow decodes. The parent asks before the first cell, where one bad photo
    would otherwise fail every cell the same way."""
    try:
        from PIL import Image
    except ImportError:  # no pillow here: the workers report it in their rows
        return ""
    resolved = _resolve_local(path)
    if not resolved.exists():
        return f"{path}: no such file (looked in the working folder and in {REPO_ROOT})"
    if not resolved.is_file():  # a folder, a device, a pipe (which would block a reader)
        return f"{path}: not a file"
    try:
        with warnings.catch_warnings():  # a very large image: its error says so, no warning
            warnings.simplefilter("ignore")
            with Image.open(resolved) as im:
                im.load()
    except Exception as exc:
        why = " ".join(str(exc).split())[:120] or type(exc).__name__
        return f"{path}: not an image pillow can read ({why})"
    return ""


def _download(url: str) -> Path:
    """Fetch `url` once into the cache (atomic rename), return the cached file."""
    target = cache_dir() / "images" / (hashlib.sha256(url.encode()).hexdigest()[:16] + Path(url).suffix)
    if target.exists():
        return target
    import requests

    target.parent.mkdir(parents=True, exist_ok=True)
    resp = requests.get(url, timeout=30)
    resp.raise_for_status()
    tmp = target.with_suffix(".part")
    tmp.write_bytes(resp.content)
    tmp.replace(target)
    return target


def load_image(spec: ImageSpec, offline: bool) -> tuple[Any, str]:
    """(RGB PIL image, source label). Offline prefers the local file; online the URL,
    falling back to the local file (and saying so in the label) if the fetch fails."""
    from PIL import Image

    source = ""
    path: Path | None = None
    if spec.url and not offline:
        try:
            path, source = _download(spec.url), spec.url
        except Exception as exc:  # network down: use the local photo, and record it
            if not spec.path:
                raise RuntimeError(f"cannot fetch image {spec.url}: {exc}") from None
            source = f"{spec.path} (fetch failed: {type(exc).__name__})"
    if path is None:
        if not spec.path:
            raise RuntimeError("offline run but the matrix gives no local image path")
        path = _resolve_local(spec.path)
        source = source or spec.path
    with Image.open(path) as im:
        return im.convert("RGB"), source


def standin_text_inputs(queries: tuple[str, ...], vocab_size: int) -> dict[str, Any]:
    """Token ids of the shape the CLIP tokenizer gives OwlViT (one row per query, padded
    to 16), for offline runs where the tokenizer vocabulary cannot be downloaded.
    Latency depends only on the shape; the ids are a stable hash of each word."""
    import torch

    bos, eos = vocab_size - 2, vocab_size - 1  # CLIP: <|startoftext|>, <|endoftext|>
    ids = torch.zeros((len(queries), CLIP_TEXT_LENGTH), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for row, query in enumerate(queries):
        words = [1 + zlib.crc32(w.encode()) % (vocab_size - 3) for w in query.lower().split()]
        tokens = [bos, *words[: CLIP_TEXT_LENGTH - 2], eos]
        ids[row, : len(tokens)] = torch.tensor(tokens)
        mask[row, : len(tokens)] = 1
    return {"input_ids": ids, "attention_mask": mask}


def make_batch(
    processor: Any,
    image: Any,
    batch_size: int,
    text_queries: tuple[str, ...] = (),
    text_offline: bool = False,
    vocab_size: int = 49408,
) -> dict[str, Any]:
    """Preprocess one image (and text queries) and repeat every tensor to the batch size.

    Text rows are repeated too: OwlViT takes `batch_size * num_queries` query rows.
    """
    import torch

    if text_queries and not text_offline:
        encoded = processor(text=[list(text_queries)], images=image, return_tensors="pt")
    else:
        encoded = processor(images=image, return_tensors="pt")
    batch = {k: v for k, v in dict(encoded).items() if isinstance(v, torch.Tensor)}
    if text_queries and text_offline:
        batch.update(standin_text_inputs(text_queries, vocab_size))
    return {k: v.repeat(batch_size, *([1] * (v.dim() - 1))) for k, v in batch.items()}
