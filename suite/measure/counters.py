"""dynamo's own counters: graph breaks and graphs compiled, and its guard failures (works from
torch 2.0.1 on)."""

from __future__ import annotations


def dynamo_counts() -> tuple[int, int]:
    """(graph breaks seen so far, graphs compiled so far)."""
    from torch._dynamo.utils import counters

    return sum(counters["graph_break"].values()), int(counters["stats"]["unique_graphs"])


def guard_failures() -> list[str]:
    """Every guard failure dynamo has recorded so far, oldest first: why it compiled a frame
    again (empty where the build records none)."""
    from torch._dynamo import utils

    failures = getattr(utils, "guard_failures", {})
    return [str(reason) for reasons in list(failures.values()) for reason in reasons]


def cudagraph_skips() -> int:
    """Graphs inductor compiled without the CUDA graphs their mode asked for (reduce-overhead,
    max-autotune): each is logged as "skipping cudagraphs due to ..." (a CPU tensor, a mutated
    input, a CPU device), and its calls then run as `default` does. 0 where the build keeps no
    such counter (torch 2.0.1)."""
    from torch._dynamo.utils import counters

    return int(counters["inductor"].get("cudagraph_skips", 0))
