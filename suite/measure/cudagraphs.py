"""What the CUDA graphs of `reduce-overhead` (and `max-autotune`) cost: the graphs recorded and
the seconds recording them, the memory their private pools hold, and the memory the compiled
function's warm-up (recording included) took beyond the eager function's in the same process.

Recordings come from torch's own accounting (suite.measure.phases: `CUDAGraphNode.record`, one
entry per graph; current releases' CUDA-graph trees record in the calls after the first, so
they are counted over the first call and the compiled warm-up). The pools' memory comes from
the caching allocator's snapshot: the segments whose `segment_pool_id` is not the default
pool's (0, 0) belong to a private pool, which is what a CUDA graph records into. The memory
beyond eager's is measured the way the pools hold memory: the allocator's *reserved* peak over
the compiled warm-up minus its reserved peak over eager's (an allocated-bytes peak misses a pool's
segments between replays: the first H200 run read -42 MB beside a 142 MB pool); where the two
disagree by more than a MB the note gives both. torch 2.0.1
times no recording and its snapshot names no pool: those columns stay empty there, with the
reason. On a CPU there are no CUDA graphs: empty, with the reason.

Not run on a GPU by this project yet: written against torch's APIs, checked with fakes
(tests/measure/test_phases_energy.py). Standard library at import; torch inside the functions.
"""

from __future__ import annotations

from typing import Any

from suite.measure.counters import cudagraph_skips
from suite.measure.phases import Ledger, records_cudagraphs, times_cudagraphs, torch_version
from suite.results.sections.cudagraphs import SECTION

COLUMNS: tuple[str, ...] = SECTION.names  # every column this module fills
DEFAULT_POOL = (0, 0)


def pool_mb(snapshot: list[dict[str, Any]] | None = None) -> tuple[float | None, str]:
    """MB (2**20 bytes) the allocator's private pools hold, or None and why not."""
    if snapshot is None:
        import torch

        snapshot = torch.cuda.memory_snapshot()
    segments = snapshot
    if segments and not all("segment_pool_id" in s for s in segments):
        return None, f"torch {torch_version()}'s allocator snapshot names no memory pool"
    held = sum(int(s["total_size"]) for s in segments if tuple(s["segment_pool_id"]) != DEFAULT_POOL)
    return held / 2**20, ""


def fields(
    device: str,
    mode: str,
    ledger: Ledger,
    eager_peak_mb: float | None,
    compiled_peak_mb: float | None,
    snapshot: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The CUDA-graph columns of a compiled cell (or of a batch size's arrival); the peaks are
    the allocator's reserved peaks (suite.measure.memory.PeakMemory.reserved_mb)."""
    out: dict[str, Any] = dict.fromkeys(COLUMNS)
    if device != "cuda":
        out["cudagraph_note"] = f"no CUDA graphs on {device}"
        return out
    if not records_cudagraphs(mode):
        out["cudagraph_note"] = f"mode {mode} records no CUDA graphs"
        return out
    notes = []
    if times_cudagraphs():
        out["cudagraph_records"], out["cudagraph_record_s"] = ledger.recordings()
    else:
        notes.append(f"torch {torch_version()} does not count or time its CUDA-graph recordings")
    out["cudagraph_pool_mb"], why = pool_mb(snapshot)
    notes += [why] if why else []
    skipped = cudagraph_skips()  # inductor gave some graph no CUDA graph (its log says why)
    notes += [f"inductor skipped CUDA graphs for {skipped} graph(s)"] if skipped else []
    if eager_peak_mb is not None and compiled_peak_mb is not None:
        extra = out["cudagraph_extra_mb"] = compiled_peak_mb - eager_peak_mb
        pool = out["cudagraph_pool_mb"]
        if pool is not None and abs(pool - extra) > 1.0:
            notes.append(
                f"reserved memory grew {extra:.0f} MB beyond eager's while the pools hold {pool:.0f} MB"
            )
    out["cudagraph_note"] = "; ".join(notes)
    return out
