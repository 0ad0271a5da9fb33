"""FORGE's L_assoc (grokray/models/assoc.py): every exact form equals the triple-by-triple
reference in float64, value and gradient; the form chosen for each shape is pinned."""

import dataclasses
from functools import partial
from pathlib import Path

import pytest
import torch

from grokray.models import assoc
from grokray.models.assoc import FORMS, assoc_form, assoc_naive
from grokray.models.forge import Forge
from tests.helpers.configs import defaults

torch.set_num_threads(1)  # tiny tensors: extra threads only contend on a shared CPU

PINNED = Path(__file__).resolve().parents[1] / "fixtures" / "assoc_forms.txt"


_cfg = partial(defaults, {"model.d": 8, "model.rank": 6, "forge.inv_hidden": 5, "arch": "forge"})


def _naive(m: Forge) -> torch.Tensor:
    p = m.params
    return assoc_naive(p["E"], p["U"], p["V"], p["W"])


def _assoc_case(n: int, seeds: list[int], **over):
    """A float64 FORGE on n elements with spread-out embeddings (E x 3), its parameters
    (E, U, V, W), per-seed weights, and the naive L_assoc with the gradient of its weighted sum:
    what every exact form is checked against."""
    m = Forge(_cfg(**over), n, n, seeds, dtype=torch.float64)
    with torch.no_grad():
        m.params["E"].mul_(3.0)
    ps = [m.params[k] for k in ("E", "U", "V", "W")]
    w = torch.tensor([0.7, -1.3, 2.1][: len(seeds)], dtype=torch.float64)
    naive = _naive(m)
    return m, ps, w, naive, torch.autograd.grad((w * naive).sum(), ps)


def _assert_as_naive(got, case, value_tol=None, grad_tol=None):
    """`got` equals the case's naive L_assoc in value and in the weighted sum's gradient."""
    _, ps, w, naive, g_naive = case
    torch.testing.assert_close(got, naive, **(value_tol or {}))
    for x, y in zip(torch.autograd.grad((w * got).sum(), ps), g_naive, strict=True):
        torch.testing.assert_close(x, y, **(grad_tol or {}))


TIGHT = {"rtol": 1e-12, "atol": 0}, {"rtol": 1e-10, "atol": 1e-13}
"""float64 tolerances of the d-space forms: value, gradient"""


@pytest.mark.parametrize("n", [3, 7, 12])
def test_the_r_space_forms_equal_naive(n):
    """The R-space forms (term by term with its fused gradient; Gram, with n <= d and n > d)
    equal the naive loss, in value and gradient, also with per-seed weights."""
    case = _assoc_case(n, [0, 1])
    m = case[0]
    for form in ("direct", "direct", "gram"):  # direct twice: reused buffers
        _assert_as_naive(m._assoc_exact(*m._tables(), form=form), case)


@pytest.mark.parametrize("n,d,R", [(5, 16, 8), (7, 4, 20), (9, 4, 8), (12, 6, 30)])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_exact_form_equals_naive(n, d, R, form):
    """Every exact L_assoc form (R-space term by term / Gram; through the structure tensor,
    term by term with the maps from the tables (2 n < d) or from T, and Gram) equals the naive
    loss in float64, in value and in the gradient of a per-seed weighted sum."""
    case = _assoc_case(n, [0, 1], **{"model.d": d, "model.rank": R})
    m, naive = case[0], case[3]
    for _ in range(2):  # reused workspace buffers
        _assert_as_naive(m._assoc_exact(*m._tables(), form=form), case, *TIGHT)
    with torch.no_grad():  # an eval: the forward alone
        torch.testing.assert_close(m._assoc_exact(*m._tables(), form=form), naive.detach(),
                                   **TIGHT[0])


@pytest.mark.parametrize("chunk_bytes", [1, 1 << 40])
def test_tensor_forms_seed_passes_equal_naive(monkeypatch, chunk_bytes):
    """The d-space forms process the seeds in passes sized to the cache: one seed per pass and
    all at once give the naive loss and gradient (3 seeds; term by term with both map routes,
    and Gram)."""
    monkeypatch.setattr(assoc, "CORE_CHUNK_BYTES", chunk_bytes)
    for n, d, form in ((5, 16, "tensor_direct"), (9, 6, "tensor_direct"), (9, 6, "tensor_gram")):
        case = _assoc_case(n, [0, 1, 2], **{"model.d": d, "model.rank": 12})
        _assert_as_naive(case[0]._assoc_exact(*case[0]._tables(), form=form), case, *TIGHT)


@pytest.mark.parametrize("from_tables", [True, False])
def test_element_maps_equal_the_structure_tensor_maps(from_tables):
    """Both routes of assoc.element_maps (from the tables, from T) give the maps of
    left_maps / right_maps through T and, for any incoming gradient, their gradients
    (float64)."""
    from grokray.models.fused import Workspace

    g = torch.Generator().manual_seed(3)
    S, n, d, R = 2, 5, 7, 11
    E, U, V = (torch.randn(S, *s, generator=g, dtype=torch.float64, requires_grad=True)
               for s in ((n, d), (R, d), (R, d)))
    W = torch.randn(S, d, R, generator=g, dtype=torch.float64, requires_grad=True)
    gP, gRm = (torch.randn(S, *s, generator=g, dtype=torch.float64)
               for s in ((n * d, d), (d, d * n)))
    T = assoc.structure_tensor(U, V, W)
    want = assoc.left_maps(E, T), assoc.right_maps(E, T)
    g_want = torch.autograd.grad(want, (E, U, V, W), (gP, gRm))
    ws = Workspace()
    for _ in range(2):  # reused buffers
        got = assoc.element_maps(E, U, V, W, ws, from_tables=from_tables)
        for x, y in zip(got, want, strict=True):
            torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)
        for x, y in zip(torch.autograd.grad(got, (E, U, V, W), (gP, gRm)), g_want, strict=True):
            torch.testing.assert_close(x, y, rtol=1e-12, atol=1e-12)


def test_form_choice():
    """The cheapest modelled form: R-space term by term for tiny groups, the structure tensor
    from about 12 elements at R 256 (d 32), its Gram form for A5; R-space Gram at small R."""
    assert assoc_form(6, 32, 256, 8) == "direct"
    assert assoc_form(24, 32, 256, 8) == "tensor_direct"
    assert assoc_form(60, 32, 256, 8) == "tensor_gram"
    assert assoc_form(60, 32, 64, 8) == "gram"
    assert assoc_form(60, 32, 256, 10**6) == "tensor_gram"  # no n^3 buffers at huge S


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
    """The form for each (n, d, R, S) of the grid, ties included, is the one the pinned file
    records (the device does not enter the choice)."""
    pinned = _pinned()
    assert len(pinned) == 128 * 8 * 7 * 5
    assert set(pinned.values()) == set(FORMS)
    got = {shape: assoc_form(*shape) for shape in pinned}
    wrong = {shape: (got[shape], want) for shape, want in pinned.items() if got[shape] != want}
    assert not wrong, f"{len(wrong)} shapes changed form, e.g. {next(iter(wrong.items()))}"


@pytest.mark.parametrize("n,d,R,full_max,form", [
    (6, 32, 256, 64, "direct"), (12, 32, 256, 64, "tensor_direct"), (12, 8, 6, 64, "gram"),
    (10, 4, 8, 64, "tensor_gram"), (12, 8, 6, 4, None)])
def test_the_model_computes_l_assoc_in_the_chosen_form(monkeypatch, n, d, R, full_max, form):
    """FORGE's algebra loss calls the function of the form assoc_form picks for its shape, once
    (none while |G| > forge.alg_full_max: sampled triples)."""
    calls = []
    for name, f in FORMS.items():
        def spy(*args, _name=name, _fn=f.fn):
            calls.append(_name)
            return _fn(*args)
        monkeypatch.setitem(FORMS, name, dataclasses.replace(f, fn=spy))
    m = Forge(_cfg(**{"model.d": d, "model.rank": R, "forge.alg_full_max": full_max}), n, n,
              [0, 1])
    m.aux_loss()
    assert calls == ([] if form is None else [form])
    assert form is None or assoc_form(n, d, R, 2) == form
