"""grokray.sweep's package face: it names its public things without importing Ray or torch."""

import subprocess
import sys

import pytest


def test_importing_the_package_imports_neither_ray_nor_torch():
    code = ("import sys, grokray.sweep as s; assert 'RaySession' in s.__all__; "
            "assert 'torch' not in sys.modules and 'ray' not in sys.modules, "
            "[m for m in ('torch', 'ray') if m in sys.modules]")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_each_public_name_comes_from_its_module():
    import grokray.sweep as s
    from grokray.sweep.executors.retry import Retries
    from grokray.sweep.session import RaySession

    assert s.RaySession is RaySession and s.Retries is Retries
    for name in s.__all__:
        assert getattr(s, name).__module__.startswith("grokray.sweep."), name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        s.nope  # noqa: B018
