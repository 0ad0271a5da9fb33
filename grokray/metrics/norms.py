"""Weight norms per seed: the total L2 norm and one per parameter group (standard curve columns).

Omnigrok and Nanda et al. track the weight norm through grokking; every gradient-trained family
gets it at every eval, computed in float64 from the stacked parameters (no effect on training).
A parameter's group is its name up to the first dot (the transformer's `W_Q.0`, `W_Q.1` are the
group `W_Q`; the MLP's and FORGE's names are groups already).
"""

from __future__ import annotations

import torch

from grokray.schema import WEIGHT_NORM, WEIGHT_NORM_PREFIX


def group_of(name: str) -> str:
    """The parameter group of a parameter name (`W_Q.0` -> `W_Q`)."""
    return name.split(".", 1)[0]


@torch.no_grad()
def weight_norms(params: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`weight_norm` and `weight_norm_<group>` per seed, [S] float64 each, for stacked
    parameters [S, ...]."""
    sq: dict[str, torch.Tensor] = {}
    for name, p in params.items():
        s = p.detach().reshape(p.shape[0], -1).to(torch.float64).square().sum(1)  # [S]
        g = group_of(name)
        sq[g] = sq[g] + s if g in sq else s
    out = {WEIGHT_NORM: torch.stack(list(sq.values())).sum(0).sqrt()}
    out.update({WEIGHT_NORM_PREFIX + g: v.sqrt() for g, v in sq.items()})
    return out
