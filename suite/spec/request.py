"""What a verb asks for (`plan`, `run`, `repeat`, `crosscheck`), resolved once from its flags:
the matrix, the profile, the build, the filters, the device, where results go. The run side's
checks (suite.run.preflight.prepare) take this, never the command line's arguments."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from suite.errors import UsageError
from suite.spec.expand import Filters, expand, pick_build, unmatched
from suite.spec.model import Cell, Matrix
from suite.spec.shard import Shard


@dataclass(frozen=True)
class Request:
    """A verb's selection. `profile` None: the device decides (smoke without a GPU, full with
    one); `build` None: detected from the running torch; `run_id` None: a new one."""

    matrix: Matrix
    profile: str | None = None
    build: str | None = None
    filters: Filters = field(default_factory=Filters)
    device: str = "auto"
    out: Path = Path("results")
    run_id: str | None = None
    shard: Shard | None = None

    def __post_init__(self) -> None:
        if self.build:
            pick_build(self.matrix, self.build)  # an unknown build: one line naming --build

    def profile_for(self, device_type: str | None) -> str:
        """The profile asked for, else the device's default."""
        if self.profile:
            return self.profile
        return "full" if device_type == "cuda" else "smoke"

    def planned(self, profile: str, build: str) -> list[Cell]:
        """The profile's cells for `build` as the filters ask (maybe none)."""
        return expand(self.matrix, profile, build, self.filters)

    def selected(self, cells: list[Cell], profile: str) -> list[Cell]:
        """`cells`, or a UsageError naming the filter flags (or --profile) when there are none."""
        if cells:
            return cells
        raise UsageError(
            "/".join(self.filters.flags) or "--profile",
            f"no cell of profile {profile!r} is selected (`suite plan --profile {profile}` lists them)",
        )

    def cells(self, profile: str, build: str) -> list[Cell]:
        """The profile's cells for `build`; none is a UsageError."""
        return self.selected(self.planned(profile, build), profile)

    def narrowed(self, cells: list[Cell], profile: str) -> str:
        """One line where a narrowing flag asked for what profile `profile` lacks (its cells run
        without it), else "": `nox -s bench-local -- --batch-sizes 1,4` on a CPU runs the smoke
        profile, batch size 1 only, and says so."""
        said = unmatched(cells, self.filters)
        return f"profile {profile!r}: {'; '.join(said)}" if said else ""
