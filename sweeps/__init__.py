"""The sweep specs and run configs shipped with grokray, as data.

This folder installs as the package `grokray_sweeps` (pyproject.toml's package-dir mapping; its
YAML files are package data), so a wheel carries the same files a checkout has. Read them
through `grokray.shipped` (names such as `smoke`, `cpu/scaling`, `run/mlp_z97`), not by path.
"""
