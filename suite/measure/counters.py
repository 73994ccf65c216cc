"""dynamo's own counters: graph breaks and graphs compiled (works from torch 2.0.1 on)."""

from __future__ import annotations


def dynamo_counts() -> tuple[int, int]:
    """(graph breaks seen so far, graphs compiled so far)."""
    from torch._dynamo.utils import counters

    return sum(counters["graph_break"].values()), int(counters["stats"]["unique_graphs"])
