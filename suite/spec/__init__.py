"""The matrix: what to measure. `vocab` (the vocabularies), `settings`
(a cell's settings and their rules), `model` (the dataclasses), `load` (matrix.yaml read
and validated where it enters), `expand` (a profile into cells, pure), `shard` and `cost`.

The names most callers need are re-exported here.
"""

from suite.spec.expand import Filters, expand, pick_build, resolve_settings
from suite.spec.load import load_matrix
from suite.spec.model import BuildSpec, Cell, Matrix, ModelSpec
from suite.spec.settings import ImageSpec, Settings

__all__ = [
    "BuildSpec",
    "Cell",
    "Filters",
    "ImageSpec",
    "Matrix",
    "ModelSpec",
    "Settings",
    "expand",
    "load_matrix",
    "pick_build",
    "resolve_settings",
]
