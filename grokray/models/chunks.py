"""How many pairs one chunk of logits holds: the trainer's gradient accumulation and evals, and
`grokray recompute`'s rebuilt models, split their pairs by the same rule, so a seed's sums run
over the same chunks wherever it is computed."""

from __future__ import annotations

LOGIT_BUDGET = 1 << 24  # elements of one eval logits chunk [S, chunk, n_out]
TRAIN_LOGIT_BUDGET = 1 << 25  # elements of one training logits chunk (gradient accumulation)
CHUNK_SEEDS = 8  # on CPU the budgets below are spent on this many seeds, however many train, so
# that a seed's arithmetic (the chunks its sums run over) does not depend on the others
CPU_CHUNK_BUDGET = 5 << 20  # on CPU, a chunk of pairs holds at most this many floats: its
# logits and the model's per-pair floats (Model.pair_floats), over CHUNK_SEEDS seeds; cache-sized
# working sets. At Z97 this gives the MLP 1,362 pairs a chunk, FORGE (d 32, R 256) 705, the
# transformer (d 128, d_mlp 512) 305: FORGE's step is 1.06-1.13x faster than at 1,351 pairs (a
# logits-only budget of 2^20; min / median), the transformer's 1.1x faster than at 675, the
# MLP's unchanged within noise (benchmarks/README.md, "Figures from probes"); on CUDA one big
# chunk is best


def chunk_pairs(budget: int, n_out: int, S: int, pair_floats: int = 0, cpu: bool = True
                ) -> int:
    """Pairs per chunk so that one logits tensor [S, chunk, n_out] holds <= budget elements;
    on CPU also the logits and `pair_floats` more per pair and seed <= CPU_CHUNK_BUDGET
    (cache-sized working sets), both over CHUNK_SEEDS seeds whatever S: a seed's chunks are
    those of its trial alone (and of `grokray recompute`'s one-seed model)."""
    if cpu:
        return max(1, min(budget // (CHUNK_SEEDS * n_out),
                          CPU_CHUNK_BUDGET // (CHUNK_SEEDS * (n_out + pair_floats))))
    return max(1, budget // max(1, S * n_out))
