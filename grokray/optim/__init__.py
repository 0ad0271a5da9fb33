"""Optimization: seed-batched optimizers, Grokfast filters, lr and lambda_alg schedules."""

from grokray.optim.grokfast import EMAFilter, MAFilter, make_filter
from grokray.optim.optimizers import SeedAdamW, SeedSGD, make_optimizer
from grokray.optim.schedules import lambda_alg, lr_at

__all__ = [
    "EMAFilter", "MAFilter", "make_filter", "SeedAdamW", "SeedSGD", "make_optimizer",
    "lambda_alg", "lr_at",
]
