"""Bounded safe YAML: a file -> plain values and the line of every key, refusing first what
could exhaust time or memory (size, nesting, aliases and what they expand to).

Every problem is one line `FILE[:LINE]: (file): what is wrong; what to do`, raised as the error
type of the document's `Kind` (a sweep spec, a run config).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import yaml

from grokray.errors import GrokrayError

__all__ = ["LIMITS", "Kind", "Lines", "decode", "is_int", "is_number", "load", "read"]

LIMITS = {
    "bytes": 1 << 20,           # size of the file
    "depth": 16,                # nesting of mappings and lists
    "aliases": 64,              # YAML aliases (*name)
    "nodes": 200_000,           # values in the document, aliases expanded
}
LINE_DEPTH = 6
"""key paths deeper than this get no line of their own (the line of their prefix)"""


@dataclass(frozen=True)
class Kind:
    """What a YAML file should hold, as its errors name it."""

    name: str
    """e.g. "sweep spec" """
    short: str
    """e.g. "spec" ("save the spec as UTF-8")"""
    example: str
    """a file of this kind, e.g. "sweeps/smoke.yaml" """
    depth: int
    """the nesting a file of this kind needs"""
    error: type[GrokrayError]
    """raised for every problem"""


TYPED = {"tag:yaml.org,2002:bool": "the boolean", "tag:yaml.org,2002:int": "the number",
         "tag:yaml.org,2002:float": "the number"}
"""the types YAML 1.1 gives an unquoted scalar that may have been meant as text (`off`, `yes`,
`1.0`, `1:30`)"""


class Lines:
    """YAML key paths -> line numbers (1-based), from the composed node tree; also the keys
    given twice (`dupes`), the keys that are lists or mappings (`bad_keys`) and the unquoted
    values YAML read as a boolean or a number (`typed`)."""

    def __init__(self, path: str, node: yaml.Node | None):
        self.path = path
        self.lines: dict[tuple[Any, ...], int] = {}
        self.dupes: list[tuple[tuple[Any, ...], int]] = []
        self.bad_keys: list[tuple[tuple[Any, ...], int]] = []
        self.typed: dict[tuple[Any, ...], tuple[str, str, str]] = {}
        """key path -> (an unquoted value there as written, cut to 40 characters; its YAML tag;
        the whole value when it has at most 40 characters, else ""), e.g. ("off",
        "tag:yaml.org,2002:bool", "off"); `misread` says what YAML made of it"""
        if node is not None:
            self._walk(node, (), set())

    def misread(self, key: tuple[Any, ...], field: str) -> str:
        """The problem line for a value at `key` that fills the text field `field` but that YAML
        read as a boolean or number (`key` in `typed`): what happened and to quote it."""
        raw, tag, whole = self.typed[key]
        try:  # what YAML made of it (a long digit string: not computed)
            value = yaml.safe_load(whole) if whole else None
        except (yaml.YAMLError, ValueError):
            value = None
        shown = "" if value is None else \
            " " + (str(value).lower() if isinstance(value, bool) else repr(value))
        return (f"{self.at(*key)}: {field}: YAML read the unquoted {raw} as {TYPED[tag]}{shown}, "
                f"not as text; quote it (\"{raw}\") if you meant the text")

    def _walk(self, node: yaml.Node, prefix: tuple[Any, ...], active: set[int]) -> None:
        self.lines.setdefault(prefix, node.start_mark.line + 1)
        if isinstance(node, yaml.ScalarNode) and node.style is None and node.tag in TYPED:
            raw = node.value if len(node.value) <= 40 else node.value[:37] + "..."
            whole = node.value if len(node.value) <= 40 else ""
            self.typed[prefix] = (raw, node.tag, whole)
        if id(node) in active:  # a recursive alias: `_count_nodes` refuses it
            return
        active = active | {id(node)}
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for k, v in node.value:
                if not isinstance(k, yaml.ScalarNode):
                    self.bad_keys.append((prefix, k.start_mark.line + 1))
                    continue
                key = k.value
                if key in seen:
                    self.dupes.append((prefix + (key,), k.start_mark.line + 1))
                seen.add(key)
                self.lines[prefix + (key,)] = k.start_mark.line + 1
                if len(prefix) < LINE_DEPTH:
                    self._walk(v, prefix + (key,), active)
        elif isinstance(node, yaml.SequenceNode) and len(prefix) < LINE_DEPTH:
            for i, v in enumerate(node.value):
                self._walk(v, prefix + (i,), active)

    def at(self, *key: Any) -> str:
        """`file:line` of the deepest known prefix of `key`."""
        for n in range(len(key), -1, -1):
            if key[:n] in self.lines:
                return f"{self.path}:{self.lines[key[:n]]}"
        return self.path

    def dupe_problems(self) -> list[str]:
        """One line per key given twice in one mapping."""
        return [f"{self.path}:{line}: {'.'.join(map(str, key))}: duplicate key; give each key "
                "once" for key, line in self.dupes]


def is_int(v: Any) -> bool:  # noqa: ANN401 - any loaded value
    """Is a loaded value an integer (`true` is a bool, not 1)?"""
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:  # noqa: ANN401 - any loaded value
    """Is a loaded value a finite int or float (not a bool, not .nan or .inf)?"""
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def read(path: str, kind: Kind) -> tuple[Any, Lines]:
    """The values of a YAML file and the lines of its keys (`load` of its bounded text)."""
    limit = LIMITS["bytes"]
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except FileNotFoundError:
        raise kind.error(f"{path}: {kind.name} not found") from None
    except IsADirectoryError:
        raise kind.error(f"{path}: is a directory; give a {kind.name} YAML file") from None
    except OSError as exc:
        raise kind.error(f"{path}: cannot read: {exc.strerror}") from None
    if len(raw) > limit:
        raise _too_large(path, kind)
    return load(decode(raw, path, kind), path, kind)


def decode(raw: bytes, path: str, kind: Kind) -> str:
    """UTF-8 (a BOM allowed) to text; a bad byte is named with its line."""
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise _fail(path, line, kind, f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset "
                                      f"{exc.start}); save the {kind.short} as UTF-8") from None


def load(text: str, path: str, kind: Kind) -> tuple[Any, Lines]:
    """The values of YAML text (None for an empty document) and the lines of its keys; keys
    that are lists or mappings are refused, keys given twice are left to the caller
    (`Lines.dupe_problems`)."""
    if len(text.encode("utf-8", "surrogatepass")) > LIMITS["bytes"]:
        raise _too_large(path, kind)
    node = _compose(text, path, kind)
    lines = Lines(path, node)
    if lines.bad_keys:
        raise kind.error("\n".join(dict.fromkeys(
            f"{path}:{line}: {'.'.join(map(str, key)) or '(top level)'}: a key must be a plain "
            "name, not a list or mapping" for key, line in lines.bad_keys)))
    return (_construct(node, path, kind) if node is not None else None), lines


def _fail(path: str, line: int | None, kind: Kind, msg: str) -> GrokrayError:
    return kind.error(f"{path}:{line}: (file): {msg}" if line else f"{path}: (file): {msg}")


def _too_large(path: str, kind: Kind) -> GrokrayError:
    return _fail(path, None, kind, f"larger than {LIMITS['bytes']:,} bytes; a {kind.name} is a "
                                   "short YAML file")


def _compose(text: str, path: str, kind: Kind) -> yaml.Node | None:
    """Parse to a node tree, refusing deep nesting, many aliases and alias bombs first."""
    depth = aliases = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                depth += 1
                if depth > LIMITS["depth"]:
                    raise _fail(path, event.start_mark.line + 1, kind,
                                f"nested more than {LIMITS['depth']} levels deep; a {kind.name} "
                                f"needs at most {kind.depth}")
            elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                depth -= 1
            elif isinstance(event, yaml.AliasEvent):
                aliases += 1
                if aliases > LIMITS["aliases"]:
                    raise _fail(path, event.start_mark.line + 1, kind,
                                f"more than {LIMITS['aliases']} YAML aliases (*name); write the "
                                "values out")
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, path, kind) from None
    if node is not None:
        _count_nodes(node, path, kind)
    return node


def _count_nodes(root: yaml.Node, path: str, kind: Kind) -> None:
    """Values in the document with every alias expanded (an alias bomb is refused here)."""
    size: dict[int, int] = {}
    # iterative post-order over the (acyclic or not) node graph, sizes memoized per node
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    on_path: set[int] = set()
    while stack:
        node, done = stack.pop()
        if id(node) in size and not done:
            continue
        kids: list[yaml.Node] = []
        if isinstance(node, yaml.MappingNode):
            kids = [x for kv in node.value for x in kv]
        elif isinstance(node, yaml.SequenceNode):
            kids = list(node.value)
        if not done:
            if id(node) in on_path:
                raise _fail(path, node.start_mark.line + 1, kind,
                            "a YAML alias refers to a value that contains it; write the values "
                            "out")
            on_path.add(id(node))
            stack.append((node, True))
            stack.extend((k, False) for k in kids if id(k) not in size)
            continue
        on_path.discard(id(node))
        n = 1 + sum(size[id(k)] for k in kids)
        if n > LIMITS["nodes"]:
            raise _fail(path, node.start_mark.line + 1, kind,
                        f"more than {LIMITS['nodes']:,} values once YAML aliases are expanded; "
                        "use fewer aliases")
        size[id(node)] = n


def _yaml_error(exc: yaml.YAMLError, path: str, kind: Kind) -> GrokrayError:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    return _fail(path, mark.line + 1 if mark else None, kind,
                 f"not valid YAML: {problem}; a {kind.name} is a YAML mapping (see "
                 f"{kind.example})")


def _construct(node: yaml.Node, path: str, kind: Kind) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(exc, path, kind) from None
    except (ValueError, OverflowError, TypeError, RecursionError) as exc:
        raise _fail(path, node.start_mark.line + 1, kind,
                    f"a value YAML cannot hold: {str(exc)[:200]}") from None
    finally:
        loader.dispose()
