"""The import layers and contracts (pyproject.toml, [tool.importlinter]) hold: `lint-imports`
passes (type-only imports count); no import cycle among grokray's and grokray_analysis's modules,
imports inside functions and under TYPE_CHECKING included; the imports made through importlib
strings, which the tools cannot see, resolve and respect the layers; docs/architecture.md's
layer list is the contract's."""

import importlib
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
LAYERS = next(c for c in CONFIG["contracts"] if c["type"] == "layers")["layers"]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--no-cache", *args], cwd=ROOT, capture_output=True,
                          text=True)


def test_the_contracts_hold():
    out = _lint()
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert f"Contracts: {len(CONFIG['contracts'])} kept, 0 broken." in out.stdout


def test_a_broken_contract_is_reported(tmp_path):
    # the CLI imports grokray.errors: a contract forbidding it must fail (the tool sees edges)
    cfg = tmp_path / "contracts.ini"
    cfg.write_text("[importlinter]\nroot_packages =\n    grokray\n    grokray_analysis\n\n"
                   "[importlinter:contract:probe]\nname = probe\ntype = forbidden\n"
                   "source_modules =\n    grokray.cli\nforbidden_modules =\n    grokray.errors\n")
    out = _lint("--config", str(cfg))
    assert out.returncode == 1 and "probe BROKEN" in out.stdout, out.stdout[-2000:]


def test_no_import_cycle_lazy_and_type_only_imports_included():
    graph = grimp.build_graph("grokray", "grokray_analysis", exclude_type_checking_imports=False,
                              cache_dir=None)
    assert "grokray.sweep.executors.base" in graph.find_modules_directly_imported_by(
        "grokray.sweep.executors.local")  # the graph sees edges
    cycles = sorted({tuple(sorted((m, n))) for m in graph.modules
                     for n in graph.find_modules_directly_imported_by(m)
                     if graph.chain_exists(importer=n, imported=m)})
    assert not cycles, cycles


def _layer(module: str) -> int | None:
    """Index of the layer `module` belongs to (0 is the top), None outside every layer."""
    for i, layer in enumerate(LAYERS):
        for name in re.split(r"\s*[|:]\s*", layer):
            if module == name or module.startswith(name + "."):
                return i
    return None


def _string_imports() -> list[tuple[str, str]]:
    """(importer, imported module) of every import made through an importlib string."""
    import grokray
    import grokray.sweep
    from grokray import cli
    from grokray import families as registry

    return ([("grokray.cli", m) for m in cli.COMMANDS.values()]
            + [("grokray", m) for m in grokray._LAZY.values()]
            + [("grokray.sweep", f"grokray.sweep.{m}") for m in grokray.sweep._NAMES.values()]
            + [("grokray.families", m) for m in registry.BUILTIN.values()])


def test_every_importlib_string_resolves():
    for importer, module in _string_imports():
        assert importlib.util.find_spec(module) is not None, (importer, module)


@pytest.mark.parametrize("importer,module", _string_imports())
def test_every_importlib_string_respects_the_layers(importer, module):
    if importer == "grokray":
        return  # the public face (grokray.load & friends) re-exports from any layer
    if module.startswith("grokray_analysis"):
        assert importer == "grokray.cli", "only the CLI uses both packages"
        return
    if importer == "grokray.families":
        # the registry (a leaf) imports its built-in families by name, each of which registers
        # itself: every family sits above it (grokray.models.forge, grokray.rfm.family)
        assert hasattr(importlib.import_module(module), "FAMILY"), module
        return
    assert _layer(importer) is not None and _layer(module) is not None, (importer, module)
    assert _layer(importer) <= _layer(module), f"{importer} imports {module}, a layer above"


def test_the_lazy_faces_name_what_their_modules_hold():
    import grokray.sweep

    for name, module in grokray.sweep._NAMES.items():
        assert hasattr(importlib.import_module(f"grokray.sweep.{module}"), name), name


def test_architecture_md_states_the_contract_layers():
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    stated = re.findall(r"^\d+\. `([^`]+)`", section, flags=re.M)
    assert stated == LAYERS
