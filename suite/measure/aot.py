"""The `aot-inductor` mode (docs/aot-inductor.md): the model exported with torch.export, compiled
ahead of time into a package with torch._inductor.aoti_compile_and_package, the package loaded
back with aoti_load_package, and its runner called like any compiled function.

Like torch.compile, `AotModel` is lazy: its first call at an input shape exports, packages and
loads (the row's compile_s, as for the JIT modes: that call's time over an eager call's), and its
figures (export, compile and load seconds, the package's size) go into the row. An exported
program has static shapes: another input shape gets its own package (as `static` recompiles).
torch builds without AOTInductor packaging (2.0.1: no torch.export either) raise `Unsupported`:
the cell is `skipped` with the reason.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

AOT_MODE = "aot-inductor"


class Unsupported(Exception):
    """This torch cannot package ahead of time (-> status `skipped`, with the reason)."""


def check_supported() -> None:
    import torch

    inductor = getattr(torch, "_inductor", None)
    if inductor is None:
        try:
            import torch._inductor as inductor
        except ImportError:
            inductor = None
    missing = [
        name
        for name, there in (
            ("torch.export.export", hasattr(getattr(torch, "export", None), "export")),
            ("torch._inductor.aoti_compile_and_package", hasattr(inductor, "aoti_compile_and_package")),
            ("torch._inductor.aoti_load_package", hasattr(inductor, "aoti_load_package")),
        )
        if not there
    ]
    if missing:
        raise Unsupported(f"torch {torch.__version__} has no {', '.join(missing)}: no AOTInductor packages")


def _export(model: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    import torch

    try:
        return torch.export.export(model, args, kwargs, strict=False)
    except TypeError:  # a torch.export without `strict`
        return torch.export.export(model, args, kwargs)


class AotModel:
    """The model, packaged ahead of time per input shape on first use."""

    def __init__(self, model: Any) -> None:
        check_supported()
        self.model = model
        self.runners: dict[tuple[Any, ...], Any] = {}
        self.figures: dict[str, Any] = {}
        self.folder = tempfile.TemporaryDirectory(prefix="suite-aot-")

    @staticmethod
    def _shape_key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        shapes = [tuple(getattr(a, "shape", ())) for a in args]
        return (*shapes, *((k, tuple(getattr(v, "shape", ()))) for k, v in sorted(kwargs.items())))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        key = self._shape_key(args, kwargs)
        runner = self.runners.get(key)
        if runner is None:
            runner = self.runners[key] = self._package(args, kwargs)
        return runner(*args, **kwargs)

    def _package(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        import torch

        path = os.path.join(self.folder.name, f"model-{len(self.runners)}.pt2")
        began = time.perf_counter()
        exported = _export(self.model, args, kwargs)
        exported_at = time.perf_counter()
        path = torch._inductor.aoti_compile_and_package(exported, package_path=path)
        compiled_at = time.perf_counter()
        runner = torch._inductor.aoti_load_package(path)
        loaded_at = time.perf_counter()
        if not self.figures:  # the first shape's: the row's
            self.figures = {
                "aot_export_s": exported_at - began,
                "aot_compile_s": compiled_at - exported_at,
                "aot_load_s": loaded_at - compiled_at,
                "aot_package_mb": os.path.getsize(path) / 2**20,
            }
        export_s, package_s, mb = (
            exported_at - began,
            compiled_at - exported_at,
            os.path.getsize(path) / 2**20,
        )
        print(
            f"aot-inductor: exported in {export_s:.2f} s, packaged in {package_s:.2f} s ({mb:.2f} MB), "
            f"loaded in {loaded_at - compiled_at:.3f} s",
            flush=True,
        )
        return runner


def fields(compiled_model: Any) -> dict[str, Any]:
    """The aot-inductor columns of a row whose compiled model is an AotModel, else none."""
    if not isinstance(compiled_model, AotModel) or not compiled_model.figures:
        return {}
    out = dict(compiled_model.figures)
    out["aot_packages"] = len(compiled_model.runners)
    return out
