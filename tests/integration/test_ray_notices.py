"""An embedded Ray's start keeps Ray's token-authentication notice out of the user's output
(with RAY_AUTH_MODE unset, Ray turns token authentication on for a new local Ray and logs a
WARNING saying so), and still runs with token authentication on."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CODE = """
import os, ray
from grokray.sweep.session import RaySession
with RaySession(num_cpus=1):
    print("mode", os.environ.get("RAY_AUTH_MODE"), ray.get(ray.put(41)) + 1)
"""


pytestmark = pytest.mark.ray  # Ray starts in the child process


def test_embedded_ray_starts_without_the_token_notice():
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    r = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "mode token 42"  # Ray's default, token authentication, kept
    assert "Token authentication" not in r.stdout + r.stderr
