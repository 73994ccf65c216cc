"""`builds.<name>` of matrix.yaml: read and validated, with the rules for `build_args`
(upper-case names, none set from other fields, none that looks like a secret, wheels by
URL and sha256 in pairs). Standard library + the project's own rules only.
"""

from __future__ import annotations

import re

from suite.redact import is_secret_name
from suite.spec.fields import Reader, kind
from suite.spec.model import BuildSpec
from suite.spec.vocab import BUILD_KINDS

# Docker build arguments set from the build's other fields (suite.sessions.docker.build_args).
DERIVED_BUILD_ARGS: tuple[str, ...] = (
    "BUILD_NAME",
    "TORCH_VERSION",
    "CUDA_VERSION",
    "PYTHON_VERSION",
    "TORCH_INDEX_URL",
    "REQUIREMENTS",
    "SUITE_IMAGE",
)
# The one Dockerfile (containers/Dockerfile) builds on a base pinned by digest and installs torch
# by exact wheel, or a nightly's night (resolved to exact wheels before the build).
_PINNED_IMAGE = re.compile(r"^[a-z0-9][a-z0-9./_:-]*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$")
_BUILD_ARG_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def _check_build_arg_name(r: Reader, key: str, value: object) -> None:
    where = f"build_args.{key}"
    if not _BUILD_ARG_NAME.match(key):
        r.fail("a build argument name is upper case letters, digits and '_'", where)
    if key in DERIVED_BUILD_ARGS:
        r.fail("is set by nox from the build's other fields; remove it here", where)
    if is_secret_name(key):  # build arguments stay in the image's history (`docker history`)
        r.fail(
            "looks like a secret; build arguments are readable in the image's history: "
            "pass secrets at run time (docker run -e NAME)",
            where,
        )
    if not isinstance(value, str) or not value.strip():
        r.fail(f"must be a non-empty string (in quotes), got {kind(value)}", where)


def _check_wheel_pair(r: Reader, args: dict[str, str], key: str, value: str) -> None:
    """A wheel given by URL is installed with --require-hashes: URL and sha256 come in pairs."""
    where = f"build_args.{key}"
    if key.endswith("_WHEEL_URL"):
        if not value.endswith(".whl"):
            r.fail("must be the URL of a wheel (.whl)", where)
        if key[: -len("URL")] + "SHA256" not in args:
            r.fail(f"needs {key[: -len('URL')]}SHA256 beside it (installed with --require-hashes)", where)
    if key.endswith("_WHEEL_SHA256"):
        if not _SHA256.match(value):
            r.fail(f"must be the wheel's sha256 (64 lower-case hex digits), got {value!r}", where)
        if key[: -len("SHA256")] + "URL" not in args:
            r.fail(f"goes with a {key[: -len('SHA256')]}URL, which is missing", where)


def _read_build_args(r: Reader) -> dict[str, str]:
    args = r.mapping("build_args")
    for key, value in args.items():
        _check_build_arg_name(r, key, value)
    for key, value in args.items():
        _check_wheel_pair(r, args, key, value)
    return args


def _check_image_args(r: Reader, args: dict[str, str]) -> None:
    """What containers/Dockerfile needs of every build with a container: its base by tag and
    digest, and its torch and torchvision by wheel (URL + sha256), or a nightly's night."""
    base = args.get("BASE_IMAGE", "")
    if not base:
        r.fail(
            "is missing: the base image, pinned by digest (e.g. ubuntu:22.04@sha256:<64 hex>)",
            "build_args.BASE_IMAGE",
        )
    if not _PINNED_IMAGE.match(base):
        r.fail(f"must be pinned by digest (name:tag@sha256:<64 hex>), got {base!r}", "build_args.BASE_IMAGE")
    if "TORCH_WHEEL_URL" not in args and "TORCH_NIGHTLY_DATE" not in args:
        r.fail(
            "is missing: torch's wheel (with TORCH_WHEEL_SHA256), or TORCH_NIGHTLY_DATE",
            "build_args.TORCH_WHEEL_URL",
        )
    if "TORCH_WHEEL_URL" in args and "TORCHVISION_WHEEL_URL" not in args:
        r.fail(
            "is missing: the torchvision built for the torch of TORCH_WHEEL_URL",
            "build_args.TORCHVISION_WHEEL_URL",
        )


def read_build(r: Reader, name: str) -> BuildSpec:
    pins = r.raw("pins", [])
    if not isinstance(pins, list) or not all(isinstance(p, str) and p for p in pins):
        r.fail("must be a list of requirement strings", "pins")
    python = r.raw("python")
    if isinstance(python, float):  # 3.10 written unquoted parses as 3.1
        r.fail('write the version in quotes, e.g. "3.10"', "python")
    cuda = r.raw("cuda", "")
    if isinstance(cuda, float):  # 11.8 unquoted is a number; 12.10 would become 12.1
        r.fail('write the version in quotes, e.g. "11.8"', "cuda")
    container = r.str("container") if r.has("container") else ""
    local = r.bool("local", True)
    build_args = _read_build_args(r)
    if build_args and not container:
        r.fail("build arguments need a `container` folder to build", "build_args")
    if not local and not container:
        r.fail("a build that is not local needs a `container` folder, or nothing can run it", "local")
    if container:
        _check_image_args(r, build_args)
    spec = BuildSpec(
        name=name,
        kind=r.str("kind", choices=BUILD_KINDS),
        python=r.str("python"),
        torch=r.str("torch"),
        container=container,
        cuda=str(cuda or ""),
        index_url=r.str("index_url") if r.has("index_url") else "",
        pins=tuple(pins),
        description=str(r.raw("description", "") or ""),
        local=local,
        build_args=build_args,
    )
    r.done()
    return spec
