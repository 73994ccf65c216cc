"""Each flag's value parsed (argparse's `type=`): a list, a count, a number within its bounds,
a run id, a shard; a bad value is a one-line UsageError naming the flag (exit status 2).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from suite.errors import UsageError

RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def int_list(flag: str, maximum: int) -> Callable[[str], tuple[int, ...]]:
    def parse(text: str) -> tuple[int, ...]:
        items = csv_list(text)
        if not items:
            raise UsageError(flag, "needs at least one value")
        out = []
        for item in items:
            # ASCII digits only ('²' is a digit to str.isdigit, not to int), and few of them
            digits = item.lstrip("0")
            if not (item.isascii() and item.isdigit()) or not digits:
                raise UsageError(flag, f"{item[:20]!r} is not a positive integer")
            if len(digits) > len(str(maximum)) or int(digits) > maximum:
                raise UsageError(flag, f"{item[:20]}{'...' * (len(item) > 20)} is more than {maximum}")
            out.append(int(digits))
        return tuple(out)

    return parse


def choice_list(flag: str, choices: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    def parse(text: str) -> tuple[str, ...]:
        items = csv_list(text)
        if not items:
            raise UsageError(flag, "needs at least one value")
        for item in items:
            if item not in choices:
                raise UsageError(flag, f"{item!r} is not one of: {', '.join(choices)}")
        return tuple(items)

    return parse


def positive(flag: str, kind: type, setting: str) -> Callable[[str], float]:
    """A number > 0, finite, within the bounds of the matrix setting it overrides
    (suite.spec.limits: the same for the flag as for matrix.yaml)."""
    from suite.spec.fields import number
    from suite.spec.limits import setting_bounds

    minimum, maximum = setting_bounds(setting)

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise UsageError(
                flag, f"{text[:20]!r} is not a{'n integer' if kind is int else ' number'}"
            ) from None
        if not value > 0 or value != value or value == float("inf"):
            raise UsageError(flag, f"must be > 0, got {text[:20]}")
        if value < minimum:
            raise UsageError(
                flag, f"must be >= {minimum} (a median and its interval need samples), got {text}"
            )
        if value > maximum:
            raise UsageError(flag, f"must be at most {number(maximum)}, got {number(value)}")
        return value

    return parse


def run_id(text: str) -> str:
    if not RUN_ID_RE.match(text):
        raise UsageError("--run-id", f"{text!r}: use letters, digits, '.', '_' or '-' (max 100)")
    return text


def shard(text: str) -> object:
    from suite.spec.shard import Shard

    return Shard.parse(text)


def min_free(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError("--min-free-mb", f"{text!r} is not a number") from None
    if not 0 <= value < float("inf"):
        raise UsageError("--min-free-mb", f"must be a number >= 0, got {text}")
    return value


MAX_CORES = 4096


def _count(flag: str, text: str) -> int:
    """An integer from 1 to MAX_CORES, for `flag`."""
    try:
        value = int(text)
    except ValueError:
        raise UsageError(flag, f"{text[:20]!r} is not an integer") from None
    if not 1 <= value <= MAX_CORES:
        raise UsageError(flag, f"must be from 1 to {MAX_CORES}, got {text}")
    return value


def cores(text: str) -> int:
    """`plan --cores`: the machine's cores, 1 to MAX_CORES."""
    return _count("--cores", text)


def compile_pool(text: str) -> int:
    """`--compile-pool`: processes compiling at once, 1 to MAX_CORES."""
    return _count("--compile-pool", text)


def bounded(flag: str, low: float, high: float, rule: str) -> Callable[[str], float]:
    """A number in [low, high) for `flag`; `rule` says which in the one-line error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise UsageError(flag, f"{text!r} is not a number") from None
        if not low <= value < high:
            raise UsageError(flag, f"must be {rule}, got {text}")
        return value

    return parse


threshold = bounded("--threshold", 0, 1, "a fraction in [0, 1), e.g. 0.05 for 5%")
compile_threshold = bounded("--compile-threshold", 0, 100, "a fraction >= 0, e.g. 0.25 for 25%")
noise_z = bounded("--noise-z", 0, 100, "a number >= 0, e.g. 4 (0: no noise floor)")
run_noise_pct = bounded("--run-noise-pct", 0, 100, "a percentage from 0 to 100, e.g. 5")
crosscheck_budget = bounded("--budget-s", 0.1, 3600, "seconds from 0.1 to 3600 a timed function, e.g. 20")


def held_out(text: str) -> int:
    """--hold-out: how many of the last repetitions to keep apart, an integer >= 0."""
    try:
        value = int(text)
    except ValueError:
        raise UsageError("--hold-out", f"{text!r} is not an integer") from None
    if value < 0:
        raise UsageError("--hold-out", f"must be >= 0, got {text}")
    return value


def count(flag: str) -> Callable[[str], int]:
    """A count of rounds or repetitions: an integer >= 2 (a spread needs two)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise UsageError(flag, f"{text!r} is not an integer") from None
        if value < 2:
            raise UsageError(flag, f"must be >= 2 (a spread needs two), got {text}")
        return value

    return parse


def env_setting(text: str) -> tuple[str, str]:
    """`KEY=VALUE` (pair's --new-env)."""
    key, sep, value = text.partition("=")
    if not sep or not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
        raise UsageError("--new-env", f"{text[:40]!r}: use KEY=VALUE")
    return key, value


def cpu_list(text: str) -> tuple[int, ...]:
    """`0-3,8`: CPUs as the kernel lists them (pair's --timing-cpus)."""
    out: list[int] = []
    for part in csv_list(text):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()) or (hi and int(hi) < int(lo)):
            raise UsageError("--timing-cpus", f"{part[:20]!r}: use CPU numbers and ranges, e.g. 0-3,8")
        out += range(int(lo), int(hi or lo) + 1)
    if not out:
        raise UsageError("--timing-cpus", "needs at least one CPU")
    return tuple(sorted(set(out)))
