"""Float64 pins: every family's curves at tiny sizes equal the stored ones (refactors keep them).

The stored numbers (tests/fixtures/pins/curves.json) come from tests/fixtures/pins/make_pins.py;
tests/fixtures/pins/semantics.json records which training-semantics version they belong to.
"""

import importlib.util
import json
import math
from pathlib import Path

import pytest
import torch

PINS = Path(__file__).resolve().parents[1] / "fixtures" / "pins"
_spec = importlib.util.spec_from_file_location("grokray_pins", PINS / "make_pins.py")
make_pins = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_pins)
STORED = json.loads((PINS / "curves.json").read_text())
RTOL = {"rfm": 1e-7, "rfm_laplace": 1e-7}
"""RFM solves a kernel system whose conditioning turns float64 rounding (which differs between
CPUs: BLAS kernels for AVX2 vs AVX-512 sum in other orders) into ~1e-9 relative differences of
its AGOP alignment; 1e-7 still catches any change of the algorithm. Every other case: 1e-9."""


@pytest.mark.parametrize("name", sorted(make_pins.CASES))
def test_float64_curves_unchanged(name):
    torch.set_num_threads(1)
    got, want = make_pins.run_case(name), STORED[name]
    assert got["n_params"] == want["n_params"]
    assert got["seeds"] == want["seeds"]
    assert got["step"] == want["step"]
    assert set(got) == set(want)
    for col in make_pins.COLUMNS:
        if col not in want:
            continue
        for g, w in zip(got[col], want[col], strict=True):
            rel = RTOL.get(name, 1e-9)
            same = (math.isnan(g) and math.isnan(w)) or g == pytest.approx(w, rel=rel, abs=1e-12)
            assert same, (col, g, w)


def pins_digest(stored: dict) -> str:
    """The SHA-256 of the stored curves (canonical JSON)."""
    import hashlib

    return hashlib.sha256(json.dumps(stored, sort_keys=True).encode()).hexdigest()


def test_training_semantics_moves_with_the_pinned_numbers():
    """tests/fixtures/pins/semantics.json maps each training-semantics version to the digest of
    the curves it gives: regenerating the pins (numbers that moved) without a new version, or a
    new version without its digest, fails here. Bump grokray.schema.TRAINING_SEMANTICS and add
    `"<new version>": "<digest>"` when the numbers move on purpose: the sweep service then stops
    serving rows of the old version as the same trials."""
    from grokray.schema import TRAINING_SEMANTICS

    known = json.loads((PINS / "semantics.json").read_text())
    digest = pins_digest(STORED)
    assert str(TRAINING_SEMANTICS) in known, (
        f"TRAINING_SEMANTICS {TRAINING_SEMANTICS} has no digest in semantics.json; add "
        f'"{TRAINING_SEMANTICS}": "{digest}"')
    assert known[str(TRAINING_SEMANTICS)] == digest, (
        "the pinned float64 curves changed without a new training-semantics version: bump "
        f'grokray.schema.TRAINING_SEMANTICS and add "<new version>": "{digest}" to '
        "tests/fixtures/pins/semantics.json")
    assert list(known.values()).count(digest) == 1, "two versions with the same curves"
