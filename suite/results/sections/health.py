"""The machine health section: how the machine was while the row's calls were timed (a tracker
around the timed loop, suite.measure.health) and the `health` verdict on it
(suite.results.health). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import INT, NUMBER, Column, Section, extra, extra_timed, table

# the figures the tracker takes while timed; the `health` verdict is read off them
FIGURES: tuple[Column, ...] = (
    extra("gpu_sm_clock_mhz_min", "NVML: lowest SM clock seen", NUMBER, "MHz"),
    extra("gpu_sm_clock_mhz_max", "NVML: highest SM clock seen", NUMBER, "MHz"),
    extra("gpu_temp_c_max", "NVML: hottest GPU reading", NUMBER, "C"),
    extra("gpu_power_w_mean", "NVML: mean power draw", NUMBER, "W"),
    extra(
        "gpu_throttle",
        "NVML's active clock-event reasons but idle (`sw_power`, `hw_slowdown`, `sw_thermal`, "
        "`hw_thermal`, `hw_power_brake`, `applications_clocks`, `sync_boost`, `display_clocks`); "
        "empty: none",
    ),
    extra(
        "gpu_other_processes",
        "other compute processes on the GPU (in a container, NVML's host pids are matched by count)",
        INT,
    ),
    extra(
        "cpu_steal_pct",
        "CPU time the hypervisor gave to other guests (`/proc/stat`): VMs share cores; empty when the "
        "timed loop was shorter than the kernel's 10 ms accounting tick",
        NUMBER,
        "%",
    ),
    extra(
        "cpu_wait_pct",
        "share of the time some runnable task waited for a CPU (Linux PSI, `/proc/pressure/cpu`): the "
        "load was above the cores",
        NUMBER,
        "%",
    ),
    extra(
        "page_faults_per_call",
        "minor page faults of the worker per timed call, eager and compiled calls alike (`getrusage`): "
        "memory the allocator gave back and took again, paid for inside the timed calls; about 0 under "
        "`malloc: steady`",
        NUMBER,
    ),
    extra_timed(
        "host_speed_moved_pct",
        "%",
        "how far the host CPU's speed moved while timed: p90 / p10 - 1 of the rounds' host probes "
        "(max / min under ten)",
        positive=False,
    ),
)
FIGURE_NAMES: tuple[str, ...] = tuple(c.name for c in FIGURES)
HOST_SPEED_MOVED = FIGURES[-1].name  # the host's speed while timed: the figures' last

_FLAGS = table(
    ("flag", "raised when"),
    (
        "`throttled`",
        "`gpu_throttle` holds a slow-down (`sw_power`, `hw_slowdown`, `sw_thermal`, `hw_thermal`, "
        "`hw_power_brake`)",
    ),
    ("`clock-varied`", "the SM clock moved by more than 2% of its highest value"),
    ("`shared-gpu`", "another compute process used the GPU"),
    ("`steal`", "`cpu_steal_pct` >= 2"),
    ("`busy`", "`cpu_wait_pct` >= 10 (without PSI: `host_load` above 1.5 x the cores)"),
    (
        "`host-varied`",
        "`host_speed_moved_pct` above the row's `run_noise_pct` (the noise its rerun interval allows), "
        "or above 10 where the row has none: the host CPU's speed, which a launch-bound figure "
        "follows, moved more than the row's figures allow for",
    ),
)
NOTES = (
    _FLAGS
    + """

The progress line says `machine busy` (or whichever flags) after such a cell, the `done:` line
counts them, the tables mark their figures with **§** and a footnote (the summary counts them),
and `compare` does not call their slower medians regressions (merge.md). For the most stable
GPU figures, lock the clocks before a run and reset them after (needs root; check the supported
values with `nvidia-smi -q -d SUPPORTED_CLOCKS`):

```bash
sudo nvidia-smi -pm 1                 # persistence mode
sudo nvidia-smi -lgc 1410,1410        # lock the SM clock (pick a sustained value for your GPU)
nox -s bench-nightly
sudo nvidia-smi -rgc                  # back to boost clocks
```

With the clock locked, `clock-varied` should never be raised; `throttled` still can be (power
or thermal limits), and means the lock did not hold."""
)

SECTION = Section(
    name="health",
    title="Machine health",
    about="A figure taken on a throttled GPU or a crowded CPU is suspect, so every row says how the "
    "machine was while its calls were timed (`suite/measure/health.py`, a tracker around the timed "
    "loop). The GPU is read through NVML (`nvidia-ml-py`, in the images and the local builds' pins) "
    "every 0.1 s; the CPU from `/proc`. Where a source is missing (no NVML or no GPU, not Linux, a "
    "kernel without PSI) its columns are empty, never guessed; a failed cell's worker returns none "
    "of them.",
    columns=(
        extra("host_load", "1-minute load average as the cell ended: contention", NUMBER),
        *FIGURES[:-1],
        extra(
            "health",
            "`ok`, or the flags that make a figure suspect (`throttled`, `clock-varied`, `shared-gpu`, "
            "`steal`, `busy`, `host-varied`: below)",
        ),
        extra_timed(
            "host_probe_us",
            "us",
            "the host probe's median: a fixed pure-Python loop run before each round (the best of "
            "three), microseconds; a slower host reads higher",
        ),
        FIGURES[-1],
    ),
    notes=NOTES,
)
