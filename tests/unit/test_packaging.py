"""What pyproject.toml installs: every package folder under grokray/ and analysis/ is listed
(the analysis folder installs as `grokray_analysis`, the sweeps/ folder as the data package
`grokray_sweeps` with every YAML file under it), and no code imports the folder's own name."""

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]


def _setuptools() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]


def test_every_package_folder_is_listed():
    folders = {"grokray": "grokray", "analysis": "grokray_analysis", "sweeps": "grokray_sweeps"}
    found = set()
    for folder, name in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *rel)))
    assert set(_setuptools()["packages"]) == found
    assert _setuptools()["package-dir"] == {"grokray_analysis": "analysis",
                                            "grokray_sweeps": "sweeps"}


def test_every_shipped_yaml_is_package_data():
    # sweeps/ holds YAML at its top and one folder down (cpu/, paper/, run/); the globs of
    # package-data must cover each file, or a wheel silently lacks it
    from fnmatch import fnmatch

    globs = _setuptools()["package-data"]["grokray_sweeps"]
    files = [p.relative_to(ROOT / "sweeps").as_posix() for p in (ROOT / "sweeps").rglob("*")
             if p.is_file() and p.suffix != ".py" and "__pycache__" not in p.parts]
    assert len(files) > 30
    assert [f for f in files if not any(fnmatch(f, g) and f.count("/") == g.count("/")
                                        for g in globs)] == []


def test_no_code_imports_the_folder_name():
    # `import analysis` works in a checkout (the folder is on sys.path there) and nowhere else
    bad = re.compile(r"^\s*(from|import)\s+analysis\b", re.M)
    for p in [*ROOT.glob("grokray/**/*.py"), *ROOT.glob("analysis/**/*.py"),
              *ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/**/*.py"),
              *ROOT.glob("scripts/**/*.py"), *ROOT.glob("docs/**/*.py")]:
        assert not bad.search(p.read_text()), p
