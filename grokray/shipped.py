"""The sweep specs and run configs shipped with grokray: the top-level sweeps/ folder, installed
as the data package `grokray_sweeps` (docs/architecture.md, "Shipped sweeps").

A shipped file's name is its path under sweeps/ without `.yaml`: `smoke`, `cpu/scaling`,
`paper/scaling`. Those under sweeps/run/ (`run/mlp_z97`) are single-trial configs for `grokray
run`; the rest are sweep specs for `grokray sweep`. `resolve` turns what a user typed into a
file: an existing file as given, else a shipped name, also when written as a path under sweeps/
(`sweeps/smoke.yaml`, as the docs' commands write it), so one command works alike in a
checkout, an editable install and an installed wheel, from any directory.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

PACKAGE = "grokray_sweeps"
"""the installed name of the sweeps/ folder"""
FOLDER = "sweeps"
"""the folder's name in a checkout, and in the paths the docs and the ledger's claims write"""
RUN_DIR = "run"
"""the subfolder of run configs"""
SWEEP, RUN = "sweep spec", "run config"
"""the two kinds of shipped file"""


@dataclass(frozen=True)
class Shipped:
    """One shipped YAML file."""

    name: str
    """its path under sweeps/ without `.yaml`, e.g. "cpu/scaling" """
    path: Path
    """the file"""
    kind: str
    """SWEEP or RUN"""

    def description(self) -> str:
        """One line: a sweep spec's `description`, a run config's first header sentence."""
        text = self.path.read_text()
        if self.kind == SWEEP:
            import yaml

            try:
                return str((yaml.safe_load(text) or {}).get("description") or "")
            except (yaml.YAMLError, AttributeError):
                return ""
        head = []
        for line in text.splitlines():
            if not line.startswith("#"):
                break
            head.append(line.lstrip("#").strip())
        first = " ".join(head).split(". ")[0].rstrip(".")
        return first + "." if first else ""


def root() -> Path:
    """The folder of the shipped files (sweeps/ in a checkout or an editable install, the
    installed `grokray_sweeps` package otherwise)."""
    try:
        return Path(str(files(PACKAGE)))
    except ModuleNotFoundError:
        # an editable install made before the mapping existed knows no grokray_sweeps; its
        # checkout's folder is beside grokray/ (`pip install -e .` again adds the mapping)
        here = Path(__file__).resolve().parents[1] / FOLDER
        if (here / "__init__.py").is_file():
            return here
        raise


def entries() -> list[Shipped]:
    """Every shipped file, sweep specs first, each kind by name."""
    base = root()
    out = []
    for p in base.rglob("*.yaml"):
        rel = p.relative_to(base).with_suffix("").as_posix()
        out.append(Shipped(rel, p, RUN if rel.split("/")[0] == RUN_DIR else SWEEP))
    return sorted(out, key=lambda e: (e.kind != SWEEP, e.name))


def name_of(arg: str) -> str:
    """What a user typed as a shipped name: `smoke`, `smoke.yaml`, `sweeps/smoke.yaml`."""
    name = arg.replace(os.sep, "/")
    if name.startswith(FOLDER + "/"):
        name = name[len(FOLDER) + 1:]
    return name[:-5] if name.endswith(".yaml") else name


def find(arg: str) -> Shipped | None:
    """The shipped file `arg` names, or None."""
    name = name_of(arg)
    return next((e for e in entries() if e.name == name), None)


def path_of(rel: str) -> Path:
    """A shipped file given by its checkout path (`sweeps/cpu/scaling.yaml`, as the ledger's
    claims name their specs); KeyError when none is shipped there."""
    entry = find(rel)
    if entry is None:
        raise KeyError(rel)
    return entry.path


def resolve(arg: str, kind: str, *, files: bool = True) -> str:
    """The file `arg` means for a command reading a `kind` (SWEEP or RUN): the file itself when
    it exists, else the shipped file of that name; a user error (one line: what is shipped)
    when neither, or when the name is a shipped file of the other kind. `files=False`: shipped
    names only, never a file of this machine (what the sweep service resolves for a client)."""
    from grokray.errors import ConfigError, SpecError

    if files and os.path.exists(arg):
        return arg
    error = SpecError if kind == SWEEP else ConfigError
    entry = find(arg)
    if entry is not None and entry.kind == kind:
        return str(entry.path)
    if entry is not None:
        cmd = "sweep" if entry.kind == SWEEP else "run"
        raise error(f"{arg}: a shipped {entry.kind}, not a {kind}: run it with "
                    f"`grokray {cmd} {entry.name}`")
    import difflib

    names = [e.name for e in entries() if e.kind == kind]
    close = difflib.get_close_matches(name_of(arg), names, n=3)
    near = f"did you mean {' or '.join(close)}? " if close else ""
    raise error(f"{arg}: {kind} not found (no such file, nor a shipped {kind} of that name); "
                f"{near}shipped: {', '.join(names)} (`grokray specs` describes them)")
