"""The exact L_assoc form chosen for each shape is pinned (tests/fixtures/assoc_forms.txt): a
refactor of the forms' table keeps every choice, ties included."""

from pathlib import Path

from grokray.models.forge import assoc_form

PINNED = Path(__file__).resolve().parents[1] / "fixtures" / "assoc_forms.txt"


def _pinned() -> dict[tuple[int, int, int, int], str]:
    """(n, d, R, S) -> form, from the run-length lines `d32 R256 S8 direct:1-10 ...`."""
    out = {}
    for line in PINNED.read_text().splitlines():
        if line.startswith("#"):
            continue
        d, R, S, *runs = line.split()
        for run in runs:
            form, span = run.split(":")
            first, last = map(int, span.split("-"))
            for n in range(first, last + 1):
                out[n, int(d[1:]), int(R[1:]), int(S[1:])] = form
    return out


def test_every_pinned_shape_gets_its_form():
    pinned = _pinned()
    assert len(pinned) == 128 * 8 * 7 * 5
    assert set(pinned.values()) == {"direct", "gram", "tensor_direct", "tensor_gram"}
    got = {shape: assoc_form(*shape) for shape in pinned}
    wrong = {shape: (got[shape], want) for shape, want in pinned.items() if got[shape] != want}
    assert not wrong, f"{len(wrong)} shapes changed form, e.g. {next(iter(wrong.items()))}"
