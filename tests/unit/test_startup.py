"""Start-ups that must stay light load no torch or Ray, each checked in a fresh interpreter:
`grokray --help` (the CLI imports every command module to build its parser), `import
grokray_analysis`, `import grokray` and `import grokray.sweep`; and a sweep's dry run, which
loads the trainer's modules to read its spec but never Ray. Imports kept inside functions in
grokray/sweep, grokray/commands and grokray/cli.py are the ones that keep these so."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("torch", "ray", "pandas")


def _loaded(code: str) -> dict[str, bool]:
    probe = (f"{code}\nimport json, sys\n"
             f"print(json.dumps({{m: m in sys.modules for m in {HEAVY!r}}}))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).parent)
    return json.loads(out.stdout.strip().splitlines()[-1])


HELP = ("from grokray.cli import main\n"
        "try:\n    main({argv!r})\nexcept SystemExit:\n    pass")


@pytest.mark.parametrize("argv", [["--help"], ["sweep", "--help"], ["reproduce", "--help"]])
def test_grokray_help_loads_no_torch_ray_or_pandas(argv):
    assert _loaded(HELP.format(argv=argv)) == {m: False for m in HEAVY}


@pytest.mark.parametrize("module", ["grokray_analysis", "grokray", "grokray.sweep"])
def test_importing_a_package_face_loads_no_torch_or_ray(module):
    got = _loaded(f"import {module}")
    assert not got["torch"] and not got["ray"], got


def test_a_dry_run_loads_no_ray(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nconfig: {group: Z5, arch: mlp}\nsteps: 10\n")
    code = ("import contextlib, io\nfrom grokray.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            f"    assert main(['sweep', {str(spec)!r}, '--dry-run', '--out', "
            f"{str(tmp_path / 'out')!r}]) == 0")
    got = _loaded(code)
    assert got["torch"] and not got["ray"], got  # the probe sees a real load: torch is in
