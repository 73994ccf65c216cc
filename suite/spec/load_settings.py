"""The settings of matrix.yaml (`defaults:` and a profile's `settings:`) read and validated: one
reader per key (`SETTING_READERS`), each naming the file and the field; the nested ones
(`run_noise_pct`, `serving`, `image`); and `Settings`' own rules, broken by what was read, named
by the field that set them. Standard library + PyYAML only (runs inside the containers).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from suite.spec import limits
from suite.spec.fields import Reader, kind
from suite.spec.settings import (
    MAX_RESOLUTION_SCALE,
    PARITY_MAX_EPS_LIMIT,
    PARITY_SETTINGS,
    RUN_NOISE_DEVICES,
    ImageSpec,
    RunNoise,
    Serving,
    SettingError,
    Settings,
)
from suite.spec.vocab import COMPILE_CACHES, DTYPES, MALLOCS, STOP_RULES, WEIGHTS

SettingReader = Callable[[Reader, str, Settings], Any]


def _choice(choices: Sequence[str]) -> SettingReader:
    return lambda r, key, base: r.str(key, choices=choices)


def _flag(r: Reader, key: str, base: Settings) -> bool:
    return r.bool(key, False)


def _bounded_int(r: Reader, key: str, base: Settings) -> int:
    low, high = limits.setting_bounds(key)
    return r.int(key, minimum=int(low), maximum=high)


def _bounded_float(r: Reader, key: str, base: Settings) -> float:
    return r.float(key, maximum=limits.setting_bounds(key)[1])


def _rate(r: Reader, key: str, base: Settings) -> float:
    value = r.float(key, positive=False, maximum=1.0)
    if value < 0.0:
        r.fail(f"must be from 0 to 1 (an agreement rate), got {value}", key)
    return value


def _resolution_scales(r: Reader, key: str, base: Settings) -> tuple[float, ...]:
    scales = r.list(key)
    for x in scales:
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not 0 < x <= MAX_RESOLUTION_SCALE:
            r.fail(f"scales must be numbers > 0 and at most {MAX_RESOLUTION_SCALE:g}, got {x!r}", key)
    if len(set(scales)) < 2:
        r.fail("needs two or more different scales (the scenario changes the size)", key)
    return tuple(float(x) for x in dict.fromkeys(scales))


def _image(r: Reader, key: str, base: Settings) -> ImageSpec:
    img = r.sub(key)
    url = img.raw("url", base.image.url) or ""
    path = img.raw("path", base.image.path) or ""
    for field_name, value in (("url", url), ("path", path)):
        if not isinstance(value, str):
            img.fail(f"must be a string, got {kind(value)}", field_name)
    if not url and not path:
        img.fail("needs a url, a path, or both")
    img.done()
    return ImageSpec(url=url, path=path)


# Each setting key of matrix.yaml -> (the Settings field it sets, its reader), in the order checked.
SETTING_READERS: dict[str, tuple[str, SettingReader]] = {
    "dtype": ("dtype", _choice(DTYPES)),
    "weights": ("weights", _choice(WEIGHTS)),
    **{key: (key, _bounded_int) for key in ("warmup", "iterations", "min_iterations", "processes")},
    **{key: (key, _bounded_float) for key in ("timeout_s", "tolerance", "ci_target_pct", "max_timing_s")},
    "shrink": ("shrink", _flag),
    "compile_cache": ("compile_cache", _choice(COMPILE_CACHES)),
    "malloc": ("malloc", _choice(MALLOCS)),
    "stop_rule": ("stop_rule", _choice(STOP_RULES)),
    "compile_cost": ("compile_cost", _flag),
    "dynamic_batch_sizes": ("dynamic_batch_sizes", lambda r, key, base: _dynamic_batch_sizes(r)),
    **{key: (key, _rate) for key in PARITY_SETTINGS},
    "parity_max_eps": (
        "parity_max_eps",
        lambda r, key, base: r.float(key, maximum=PARITY_MAX_EPS_LIMIT),
    ),
    "run_noise_pct": ("run_noise", lambda r, key, base: _run_noise(r.sub(key), base.run_noise)),
    "speedup_noise_pct": ("speedup_noise", lambda r, key, base: _run_noise(r.sub(key), base.speedup_noise)),
    "serving": ("serving", lambda r, key, base: _serving(r.sub(key), base.serving)),
    "resolution_scales": ("resolution_scales", _resolution_scales),
    "image": ("image", _image),
}


def read_settings(r: Reader, base: Settings) -> dict[str, Any]:
    """Validated setting overrides present in `r` (only those keys)."""
    return {out: read(r, key, base) for key, (out, read) in SETTING_READERS.items() if r.has(key)}


def _run_noise(r: Reader, base: RunNoise) -> RunNoise:
    """`run_noise_pct: {cpu: 5.0, cuda: ~}` (or `speedup_noise_pct`): percent per device type, null
    for not measured; a device left out keeps `base`'s."""
    if not isinstance(r.data, Mapping):
        r.fail(f"must be a mapping of {' / '.join(RUN_NOISE_DEVICES)} to percent, got {kind(r.data)}")
    out: dict[str, float | None] = {}
    for device in RUN_NOISE_DEVICES:
        if r.has(device):
            out[device] = None if r.raw(device) is None else r.float(device, positive=False, maximum=100.0)
            if out[device] is not None and out[device] < 0:  # type: ignore[operator]
                r.fail(f"must be from 0 to 100 (percent), got {out[device]}", device)
    r.done()
    return replace(base, **out)


SERVING_INTS: tuple[str, ...] = ("max_batch", "max_queue", "burst", "requests")


def _serving(r: Reader, base: Serving) -> Serving:
    """`serving: {p99_ms, max_batch, max_wait_ms, max_queue, burst, requests}`: the keys given
    replace `base`'s (`p99_ms: ~` restores the default target, a multiple of batch-1 latency)."""
    if not isinstance(r.data, Mapping):
        r.fail(f"must be a mapping (p99_ms, max_batch, max_wait_ms, ...), got {kind(r.data)}")
    out: dict[str, Any] = {}
    if r.has("p99_ms"):
        out["p99_ms"] = None if r.raw("p99_ms") is None else r.float("p99_ms", maximum=3.6e6)
    if r.has("max_wait_ms"):
        out["max_wait_ms"] = r.float("max_wait_ms", positive=False, maximum=3.6e6)
        if out["max_wait_ms"] < 0:
            r.fail(f"must be >= 0, got {out['max_wait_ms']}", "max_wait_ms")
    for key in SERVING_INTS:
        if r.has(key):
            out[key] = r.int(key, minimum=0 if key == "max_queue" else 1)
    r.done()
    try:
        return replace(base, **out)
    except SettingError as exc:
        r.fail(exc.message, exc.field_among([f"serving.{k}" for k in out]).removeprefix("serving."))
        raise


def _dynamic_batch_sizes(r: Reader) -> tuple[int, ...]:
    """Two or more distinct batch sizes (>= 1): the dynamic-batch scenario's sequence."""
    sizes = r.list("dynamic_batch_sizes")
    for b in sizes:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            r.fail(f"batch sizes must be integers >= 1, got {kind(b)}", "dynamic_batch_sizes")
    distinct = tuple(dict.fromkeys(sizes))
    if len(distinct) < 2:
        r.fail("needs two or more different batch sizes (the scenario changes them)", "dynamic_batch_sizes")
    return distinct


def settings_from(r: Reader, base: Settings, read: Mapping[str, Any]) -> Settings:
    """`base` with the settings `read` from `r` applied; a rule of `Settings` they break
    (its `__post_init__`) is named by the file and the field that set it."""
    try:
        return replace(base, **read)
    except SettingError as exc:
        r.fail(exc.message, exc.field_among(read))
        raise  # r.fail raised; for the type checker
