"""matrix.yaml's text to plain data, refusing what PyYAML alone accepts silently or slowly.

PyYAML's safe loader keeps the last of two equal keys in a mapping (a second `iterations:`
silently wins), builds an alias as a shared object (a dozen lines can then stand for
billions of nodes, and whatever walks or copies the data later hangs), accepts an alias
inside the node it names (a cycle), and recurses once per nesting level. All of that is
checked here on the composed node graph, before any Python object is built, so a bad file
costs milliseconds and ends in one line naming the file, the line and the field.
Standard library + PyYAML only (runs inside the containers).
"""

from __future__ import annotations

from pathlib import Path

import yaml

from suite.errors import UsageError, first_line
from suite.spec.fields import join
from suite.spec.limits import MAX_MATRIX_BYTES, MAX_MATRIX_NODES, MAX_NESTING

_MERGE_TAG = "tag:yaml.org,2002:merge"


def read_text(path: Path) -> str:
    """The file's text, read no further than the size bound (`/dev/zero` ends too)."""
    file = str(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_MATRIX_BYTES + 1)
    except FileNotFoundError:
        raise UsageError(file, "no such file") from None
    except OSError as exc:
        raise UsageError(file, f"cannot read: {exc.strerror or exc}") from None
    if len(data) > MAX_MATRIX_BYTES:
        raise UsageError(
            file, f"larger than {MAX_MATRIX_BYTES // 1024} kB: not a matrix (suite/spec/limits.py)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(file, f"cannot read: not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def load_yaml(path: Path) -> object:
    """The file's data (None for an empty file); UsageError for anything refused."""
    file = str(path)
    text = read_text(path)
    loader = None
    try:
        loader = _Loader(text)  # its reader refuses control characters at once
        node = loader.get_single_node()
        if node is None:
            return None
        _check_graph(node, file)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else file
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(where, f"not valid YAML: {problem}") from None
    except _TooDeep as exc:
        raise UsageError(f"{file}:{exc.line}", f"nested more than {MAX_NESTING} levels deep") from None
    except (ValueError, OverflowError) as exc:  # e.g. an integer of over 4300 digits
        raise UsageError(file, f"not valid YAML: {first_line(str(exc), type(exc).__name__)}") from None
    finally:
        if loader is not None:
            loader.dispose()


class _TooDeep(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, whose composer (recursive, a level per call) stops at
    MAX_NESTING levels: `[[[[...` ends in one line at once, not in a RecursionError."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        self._depth += 1
        try:
            if self._depth > MAX_NESTING + 1:  # the document's own node is level 0
                raise _TooDeep(self.peek_event().start_mark.line + 1)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _check_graph(root: yaml.Node, file: str) -> None:
    """Duplicate keys, cycles, nesting and the expanded size, in one pass over the graph.

    Each distinct node is visited once (iteratively: no recursion limit), and the size it
    expands to (itself plus its children's expanded sizes) is summed, so an alias counts
    as many times as it is used without being walked that often."""
    keys = yaml.constructor.SafeConstructor()
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, str, int, bool]] = [(root, "", 0, False)]
    while stack:
        node, path, depth, finished = stack.pop()
        children = _children(node, path)
        if finished:
            on_path.discard(id(node))
            size = 1 + sum(sizes[id(child)] for child, _ in children)
            if size > MAX_MATRIX_NODES:
                raise UsageError(
                    f"{file}:{_line(node)}",
                    f"{path or '(document)'}: expands to more than {MAX_MATRIX_NODES:,} nodes "
                    "(aliases used inside aliases?); a matrix needs a few thousand",
                )
            sizes[id(node)] = size
            continue
        if id(node) in sizes:
            continue
        if id(node) in on_path:
            raise UsageError(
                f"{file}:{_line(node)}", f"{path}: an alias refers to a node that contains it (a cycle)"
            )
        if depth > MAX_NESTING:
            raise UsageError(f"{file}:{_line(node)}", f"{path}: nested more than {MAX_NESTING} levels deep")
        if isinstance(node, yaml.MappingNode):
            _check_keys(node, path, file, keys)
        on_path.add(id(node))
        stack.append((node, path, depth, True))
        stack.extend((child, child_path, depth + 1, False) for child, child_path in reversed(children))


def _children(node: yaml.Node, path: str) -> list[tuple[yaml.Node, str]]:
    if isinstance(node, yaml.SequenceNode):
        return [(child, f"{path}[{i}]") for i, child in enumerate(node.value)]
    if isinstance(node, yaml.MappingNode):
        out: list[tuple[yaml.Node, str]] = []
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else "?"
            out += [(key, path), (value, join(path, name))]
        return out
    return []


def _check_keys(node: yaml.MappingNode, path: str, file: str, keys: yaml.constructor.SafeConstructor) -> None:
    """A key given twice in one mapping: both lines named (PyYAML would keep the last).
    Keys are compared as the values they load as (`1` and `0x1` are the same key); keys
    brought in by a merge (`<<: *base`) may be overridden, as YAML intends."""
    seen: dict[object, int] = {}
    for key, _ in node.value:
        if key.tag == _MERGE_TAG or not isinstance(key, yaml.ScalarNode):
            continue
        try:
            identity: object = keys.construct_object(key)
            hash(identity)
        except (yaml.YAMLError, TypeError, ValueError, OverflowError):
            identity = (key.tag, key.value)
        if identity in seen:
            raise UsageError(
                f"{file}:{_line(key)}",
                f"{join(path, key.value)}: given twice in one mapping, at lines {seen[identity]} and "
                f"{_line(key)} (YAML would keep only the last); remove one",
            )
        seen[identity] = _line(key)
