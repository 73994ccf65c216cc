"""What a row says of the host CPU and of float32 matmuls: the CPU model read from /proc/cpuinfo
when the hypervisor masks its name, and TF32 / matmul precision as the worker ran."""

from __future__ import annotations

import pytest

from suite.measure.provenance import cpu_name, masked, matmul_fields
from suite.results import BY_NAME

SAPPHIRE = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 8
flags\t\t: fpu sse avx2 avx512f avx512_bf16 avx512_fp16 amx_tile amx_bf16

processor\t: 1
model name\t: something else
"""


def test_a_masked_cpu_name_is_followed_by_what_the_cpu_says_of_itself() -> None:
    # the H200's host: the VM masked the model; family 6 model 143 is Sapphire Rapids
    assert cpu_name(SAPPHIRE) == (
        "Intel(R) Xeon(R) Processor [family 6 model 143 stepping 8: Sapphire Rapids; "
        "AMX, AVX-512, bf16, fp16]"
    )
    assert cpu_name(SAPPHIRE, plain=True) == "Intel(R) Xeon(R) Processor"  # a CPU row's gpu_name: its key
    cascade = SAPPHIRE.replace("143", "85").replace("stepping\t: 8", "stepping\t: 7")
    assert "Cascade Lake" in cpu_name(cascade)
    epyc = (
        "vendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\nflags\t: avx2\n"
    )
    assert cpu_name(epyc) == "AMD EPYC [family 25 model 1: Milan (Zen 3); AVX2]"
    unknown = (
        "vendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 250\nmodel name\t: Intel Xeon Processor\n"
    )
    assert cpu_name(unknown) == "Intel Xeon Processor [family 6 model 250: codename unknown]"


@pytest.mark.parametrize(
    ("name", "hidden"),
    [
        ("Intel(R) Xeon(R) Platinum 8480+", False),
        ("AMD EPYC 7B13 64-Core Processor", False),
        ("Intel(R) Xeon(R) Processor", True),
        ("AMD EPYC Processor (with IBPB)", True),
        ("QEMU Virtual CPU version 2.5+", True),
    ],
)
def test_which_names_are_masked(name: str, hidden: bool) -> None:
    assert masked(name) is hidden
    if not hidden:
        assert cpu_name(f"model name\t: {name}\ncpu family\t: 6\nmodel\t: 143\n") == name


def test_tf32_and_matmul_precision_are_read_as_the_worker_runs() -> None:
    import torch

    before = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")  # what turns TF32 on for matmuls
        f = matmul_fields()
        assert f["matmul_precision"] == "high" and f["tf32_matmul"] in ("true", "false")
        torch.set_float32_matmul_precision("highest")
        f = matmul_fields()
        assert f == {**f, "matmul_precision": "highest", "tf32_matmul": "false"}
    finally:
        torch.set_float32_matmul_precision(before)
    for column in ("tf32_matmul", "tf32_cudnn", "matmul_precision"):
        assert column in BY_NAME
