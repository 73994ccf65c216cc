"""The provenance and machine section: which software ran (the image, the wheels, torch's own
versions and float32 matmul settings) on which machine (the GPU's state as nvidia-smi and Docker
report it; suite.measure.provenance, suite.measure.machine). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import NUMBER, Column, Section, extra


def _smi(name: str, doc: str, kind: str = "text", unit: str = "") -> Column:
    return extra(name, f"nvidia-smi: {doc}", kind, unit)


SOFTWARE: tuple[Column, ...] = (
    Column("torch_version", doc="`torch.__version__`"),
    Column("torch_git", doc="`torch.version.git_version`: the commit torch was built from"),
    Column("cuda_version", doc="the CUDA that ran (empty on a CPU run: no CUDA ran)"),
    Column("cudnn_version", doc="the cuDNN that ran (empty on a CPU run)"),
    Column("triton_version", doc="the triton that ran"),
    Column("transformers_version", doc="the transformers that ran"),
    Column("python_version", doc="the worker's Python"),
    Column("driver_version", doc="the NVIDIA driver"),
    Column("image", doc="the container image, or `host`"),
    Column("suite_version", doc="this suite's version"),
    extra("cpu_name", "the host CPU's model (below): latency on a CPU, launch overhead on a GPU"),
    extra("torch_cuda_build", "`torch.version.cuda`: the CUDA the torch wheel was built for, CPU runs too"),
)
# the machine's state for the GPU and image of the run; empty where a source gave none, never guessed
MACHINE: tuple[Column, ...] = (
    _smi("gpu_uuid", "the GPU's UUID"),
    _smi("gpu_compute_capability", 'compute capability ("9.0")'),
    _smi("gpu_persistence_mode", "`Enabled` or `Disabled`"),
    _smi("gpu_power_limit_w", "the power limit in force", NUMBER, "W"),
    _smi("gpu_ecc_mode", "`Enabled` or `Disabled` (current)"),
    _smi("gpu_mig_mode", "`Enabled` or `Disabled` (current)"),
    _smi("gpu_app_clock_mhz", "application clock, graphics", NUMBER, "MHz"),
    Column(
        "gpu_clocks_locked",
        contract=False,
        setting=True,
        doc='`"MIN,MAX"` MHz when the run locked the GPU clocks, `no` when it did not (not asked, or '
        "the lock failed), empty when nothing said",
    ),
    extra("image_id", "the image's ID as Docker reports it (`sha256:...`); else empty"),
)
# which wheels the image installed, as the run resolved them (containers.md)
WHEELS: tuple[Column, ...] = (
    extra(
        "nightly_date",
        "the torch nightly's date (YYYYMMDD): the night the image was built from, else the date in "
        "`torch_version` (`2.16.0.dev20261126+cu130`); empty for a release",
    ),
    extra(
        "torch_wheel_url",
        "the torch wheel the image installed, by URL (empty outside an image, or where torch came by "
        "version: `--torch-from-pypi`)",
    ),
    extra("torch_wheel_sha256", "that wheel's sha256, as `pip --require-hashes` checked it"),
    extra("torchvision_version", "the torchvision that ran (empty where none is installed)"),
)
# what float32 matmuls and convolutions ran as, in the worker
FLOAT32: tuple[Column, ...] = (
    Column(
        "tf32_matmul",
        contract=False,
        choices=("true", "false"),
        doc="`torch.backends.cuda.matmul.allow_tf32` in the worker: float32 matmuls on TF32 tensor cores",
    ),
    Column("tf32_cudnn", contract=False, choices=("true", "false"), doc="`torch.backends.cudnn.allow_tf32`"),
    extra(
        "matmul_precision", "`torch.get_float32_matmul_precision()`: `highest` (no TF32), `high`, `medium`"
    ),
)
# what an Environment (suite.measure.provenance) fills besides the row's device and GPU name
ENVIRONMENT: tuple[str, ...] = tuple(c.name for c in (*SOFTWARE, *WHEELS))
MACHINE_NAMES: tuple[str, ...] = tuple(c.name for c in MACHINE)
FLOAT32_NAMES: tuple[str, ...] = tuple(c.name for c in FLOAT32)

SECTION = Section(
    name="provenance",
    title="Provenance and the machine",
    about="Which software ran, on which machine: the versions torch reports, the wheels the image "
    "installed ([containers.md](containers.md#tonights-nightly)), how float32 matmuls ran and the "
    "GPU's state. `python -m suite env` prints the provenance of the current environment.",
    columns=(*SOFTWARE, *MACHINE, *WHEELS, *FLOAT32),
    notes='`cpu_name` is the model name from `/proc/cpuinfo`; where a hypervisor masks it ("Intel(R) '
    'Xeon(R) Processor", "AMD EPYC"), followed by what the CPU reports of itself, e.g. `Intel(R) '
    "Xeon(R) Processor [family 6 model 143 stepping 8: Sapphire Rapids; AMX, AVX-512, bf16, fp16]` "
    "(`gpu_name` on a CPU row keeps the plain name: it is part of a cell's key).",
)
