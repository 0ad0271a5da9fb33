"""Training throughput: grokray's seed-batched trainer vs a plain per-seed reference loop.

    python benchmarks/bench_train.py          # MLP, FORGE, transformer; Z97, S5; S = 1, 8
    python benchmarks/bench_train.py --quick  # fewer steps, one repeat
    python benchmarks/bench_train.py --archs mlp --groups Z97 --seeds 8 --set model.d=128

The reference is the way the public grokking repos train: one `nn.Module` per seed, trained one
seed after the other with `torch.optim.AdamW`, full batch, `F.cross_entropy`, evaluated on the
train and val sets every `eval_every` steps. It computes the same math as grokray's config
(same split, shapes, init scale, optimizer settings, FORGE losses and lambda schedule, transformer
layout) with stock PyTorch modules. grokray runs `run_trial(cfg)` with the S seeds together.

The "work ratio" column is the ratio of GEMM work (multiply-adds per seed-step, reference /
grokray; `work_ratio`): the speedup grokray would show if both ran their matmuls equally fast and
nothing else cost anything. It bounds what removing work can give at a given shape.

Roofline (benchmarks/roofline.py): one extra run of each side counts every matmul by shape
(forward and backward); the machine's sgemm rate at each of those shapes is measured in the same
process, and "roof" = (seconds those matmuls alone would take at those rates) / (the side's wall
time), the fraction of the machine's GEMM limit at its own shapes that the run reaches (1.0:
nothing but GEMMs, each as fast as alone). "GF/s" is the side's achieved GEMM rate (GEMM FLOPs /
wall); "limit GF/s" is the machine's rate at grokray's shapes (FLOPs / GEMM-only seconds).

Figure: seed-steps/s = S * steps / wall seconds (setup included for both: model init, split,
optimizer; the group's Cayley table is built once before timing). Reference and grokray runs
alternate (ref, grokray, grokray, ref, ...) so machine noise hits both alike; the median over
--repeats is reported. One torch thread by default (the machine is shared).

Clock (`--clock`): `cpu` (the default) times every run and every sgemm in this process's CPU
seconds (`time.process_time`), so that on a loaded machine the time spent waiting for a core
counts on neither side and the roof of a run is not compared with sgemm rates taken at another
moment's load; `wall` times them on the wall clock (what a quiet machine gives; earlier
figures were wall).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys

import roofline
import torch
import torch.nn.functional as F
from roofline import GemmCounter, cube_rate, gemm_seconds, sgemm_rates
from torch import nn

from grokray.config import TrialConfig
from grokray.models import chunks
from grokray.models.mlp import ACTS, hidden_width
from grokray.optim import lambda_alg
from grokray.tasks import Task, make_task, split
from grokray.trial import run_trial

STEPS = {"mlp": 200, "forge": 200, "transformer": 6}
QUICK_STEPS = {"mlp": 60, "forge": 60, "transformer": 3}


# ----------------------------------------------------------------------------- reference models


class RefMLP(nn.Module):
    """Embed a and b, concatenate, one hidden layer, |G| logits."""

    def __init__(self, cfg: TrialConfig, n_in: int, n_out: int) -> None:
        super().__init__()
        d, h = cfg.model.d, hidden_width(cfg, n_in, n_out)
        self.Ea, self.Eb = nn.Embedding(n_in, d), nn.Embedding(n_in, d)
        self.l1, self.l2 = nn.Linear(2 * d, h), nn.Linear(h, n_out)
        self.act = ACTS[cfg.model.act]

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.l2(self.act(self.l1(torch.cat([self.Ea(a), self.Eb(b)], -1))))

    def aux(self, gen: torch.Generator) -> torch.Tensor:
        return torch.zeros(())


class RefForge(nn.Module):
    """FORGE written plainly: E, DAD product W((U x) * (V y)), tied_dist / tied / separate
    decoding, identity e, inverse g_phi, the three algebra losses on sampled triples."""

    def __init__(self, cfg: TrialConfig, n_in: int, n_out: int) -> None:
        super().__init__()
        f, d, R = cfg.forge, cfg.model.d, cfg.model.rank
        self.cfg, self.n = cfg, n_in
        self.E = nn.Parameter(torch.randn(n_in, d) / math.sqrt(d))
        self.U, self.V = nn.Linear(d, R, bias=False), nn.Linear(d, R, bias=False)
        self.W = nn.Linear(R, d, bias=False)
        self.e = nn.Parameter(torch.randn(d) / math.sqrt(d))
        self.g = nn.Sequential(nn.Linear(d, f.inv_hidden), nn.ReLU(), nn.Linear(f.inv_hidden, d))
        self.D = nn.Linear(d, n_out) if f.decode == "separate" else None

    def mu(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.W(self.U(x) * self.V(y))

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        z = self.mu(self.E[a], self.E[b])
        if self.D is not None:
            return self.D(z)
        if self.cfg.forge.decode == "tied":
            return z @ self.E.T
        return 2 * z @ self.E.T - (self.E ** 2).sum(-1)  # -|z - E_c|^2 up to -|z|^2

    def aux(self, gen: torch.Generator) -> torch.Tensor:
        f, E, n = self.cfg.forge, self.E, self.n
        if n <= f.alg_full_max:
            i, j, k = torch.cartesian_prod(*(torch.arange(n),) * 3).T.to(E.device)
        else:
            i, j, k = torch.randint(n, (3, f.alg_samples), generator=gen).to(E.device)
        x, y, z = E[i], E[j], E[k]
        sq = lambda v: (v ** 2).sum(-1).mean()  # noqa: E731
        assoc = sq(self.mu(self.mu(x, y), z) - self.mu(x, self.mu(y, z)))
        x = E if n <= f.alg_samples else \
            E[torch.randint(n, (f.alg_samples,), generator=gen).to(E.device)]
        ee = self.e.expand_as(x)
        ident = sq(self.mu(ee, x) - x) + sq(self.mu(x, ee) - x)
        gx = self.g(x)
        inv = sq(self.mu(x, gx) - ee) + sq(self.mu(gx, x) - ee)
        return f.w_assoc * assoc + f.w_ident * ident + f.w_inv * inv


class RefTransformer(nn.Module):
    """Decoder-only transformer over `a b =` (pre-LayerNorm, learned positions, causal
    attention via F.scaled_dot_product_attention, ReLU MLP), logits at the last position."""

    def __init__(self, cfg: TrialConfig, n_in: int, n_out: int) -> None:
        super().__init__()
        t = cfg.transformer
        d, self.H = t.d_model, t.n_heads
        self.n_in = n_in
        self.emb, self.pos = nn.Embedding(n_in + 1, d), nn.Parameter(torch.randn(3, d) * 0.02)
        self.blocks = nn.ModuleList()
        for _ in range(t.n_layers):
            self.blocks.append(nn.ModuleDict({
                "ln1": nn.LayerNorm(d), "qkv": nn.Linear(d, 3 * d, bias=False),
                "o": nn.Linear(d, d, bias=False), "ln2": nn.LayerNorm(d),
                "mlp": nn.Sequential(nn.Linear(d, t.d_mlp), nn.ReLU(), nn.Linear(t.d_mlp, d)),
            }))
        self.lnf, self.unembed = nn.LayerNorm(d), nn.Linear(d, n_out, bias=False)

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        x = self.emb(torch.stack([a, b, torch.full_like(a, self.n_in)], -1)) + self.pos
        B, T, d = x.shape
        for blk in self.blocks:
            q, k, v = blk["qkv"](blk["ln1"](x)).view(B, T, 3, self.H, -1).permute(2, 0, 3, 1, 4)
            z = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # [B, H, T, e]
            x = x + blk["o"](z.transpose(1, 2).reshape(B, T, d))
            x = x + blk["mlp"](blk["ln2"](x))
        return self.unembed(self.lnf(x[:, -1]))

    def aux(self, gen: torch.Generator) -> torch.Tensor:
        return torch.zeros(())


REFS = {"mlp": RefMLP, "forge": RefForge, "transformer": RefTransformer}


def _evaluate(model: nn.Module, sets: list) -> list[float]:
    """Loss and accuracy on the train and val sets (host sync, as the reference loops do)."""
    out = []
    with torch.no_grad():
        for a, b, y in sets:
            logits = model(a, b)
            out += [F.cross_entropy(logits, y).item(),
                    (logits.argmax(-1) == y).float().mean().item()]
    return out


def reference_run(cfg: TrialConfig, task: Task, device: str = "cpu") -> float:
    """Train every seed of cfg one after the other, the plain way; returns wall seconds."""
    dev = torch.device(device)
    t0 = roofline.clock()
    o = cfg.optim
    for seed in cfg.seeds:
        torch.manual_seed(seed)
        gen = torch.Generator().manual_seed(seed)
        tr, va = split(task, cfg.train_frac, cfg.seed_data_seed(seed))
        model = REFS[cfg.arch](cfg, task.n_in, task.n_out).to(dev)
        if cfg.model.init_scale != 1.0:
            with torch.no_grad():
                for p in model.parameters():
                    p.mul_(cfg.model.init_scale)
        opt = torch.optim.AdamW(model.parameters(), lr=o.lr, betas=(o.beta1, o.beta2), eps=o.eps,
                                weight_decay=o.weight_decay)
        sets = [(task.a[i].to(dev), task.b[i].to(dev), task.y[i].to(dev)) for i in (tr, va)]
        a_tr, b_tr, y_tr = sets[0]
        _evaluate(model, sets)
        for step in range(cfg.steps):
            loss = F.cross_entropy(model(a_tr, b_tr), y_tr)
            lam = lambda_alg(step, cfg.forge, cfg.steps) if cfg.arch == "forge" else 0.0
            if lam > 0.0:
                loss = loss + lam * model.aux(gen)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
                _evaluate(model, sets)
    if dev.type == "cuda":
        torch.cuda.synchronize()
    return roofline.clock() - t0


def work_ratio(cfg: TrialConfig, task: Task) -> float | None:
    """GEMM multiply-adds per seed-step, reference / grokray, over the run's lambda schedule.

    Counts forward + both backward products of every matmul whose size grows with the batch or
    the sampled triples (per-element tables and parameter-sized products are left out: they are
    under 1% here). If grokray computed every GEMM at the reference's speed and nothing else
    mattered, the measured ratio would be this; above it means grokray also runs its GEMMs or
    its elementwise work faster. None where not counted (transformer; full associativity).
    """
    n, N = task.n_out, round(len(task) * cfg.train_frac)
    d = cfg.model.d
    if cfg.arch == "mlp":
        h = hidden_width(cfg, task.n_in, n)
        return (3 * (2 * d * h + h * n)) / (3 * h * n)
    if cfg.arch != "forge" or task.n_in <= cfg.forge.alg_full_max:
        return None
    R, f = cfg.model.rank, cfg.forge
    m, k = f.alg_samples, min(task.n_in, f.alg_samples)  # sampled triples, elements
    ref_data, our_data = N * (6 * d * R + 3 * R * d + 3 * d * n), N * (3 * R * d + 3 * d * n)
    # assoc: the reference evaluates mu (3 GEMMs, x3 with backward) 4 times per triple; grokray
    # 15 GEMMs of R x d per triple (table rows for U x, V y). ident + inv: 4 mu per element
    # (reference) vs one GEMM over the 4 products + U g(x), V g(x) (grokray); g_phi the same.
    ref_aux = m * 36 * d * R + k * (4 * 9 * d * R + 6 * d * f.inv_hidden)
    our_aux = m * 15 * d * R + k * (3 * 4 * d * R + 6 * d * R + 6 * d * f.inv_hidden)
    frac = sum(lambda_alg(t, f, cfg.steps) > 0 for t in range(cfg.steps)) / cfg.steps
    return (ref_data + frac * ref_aux) / (our_data + frac * our_aux)


def grokray_run(cfg: TrialConfig) -> float:
    t0 = roofline.clock()
    result = run_trial(cfg)
    wall = roofline.clock() - t0
    bad = [s for s in result.seeds if s.status not in ("grokked", "not_grokked")]
    if bad:
        raise RuntimeError(f"grokray run failed: {bad[0].status} {bad[0].error}")
    return wall


def make_cfg(arch: str, group: str, S: int, steps: int, overrides: dict) -> TrialConfig:
    base = {"group": group, "arch": arch, "steps": steps, "eval_every": 100,
            "seeds": list(range(S)), "device": "cpu", "metrics.patience": 0, **overrides}
    return TrialConfig.from_dict(base)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--archs", default="mlp,forge,transformer")
    ap.add_argument("--groups", default="Z97,S5")
    ap.add_argument("--seeds", default="1,8", help="comma list of S values")
    ap.add_argument("--steps", type=int, default=None, help="steps per run (default per arch)")
    ap.add_argument("--repeats", type=int, default=None, help="pairs of runs (default 2; quick 1)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=sorted(roofline.CLOCKS), default="cpu",
                    help="time runs and sgemms in process CPU seconds (default) or wall seconds")
    ap.add_argument("--cpu-chunk-budget", type=int, default=None, metavar="N",
                    help="grokray's CPU chunk budget (grokray.models.chunks.CPU_CHUNK_BUDGET: "
                         "floats of logits and per-pair buffers in one chunk; default: the "
                         "trainer's)")
    ap.add_argument("--quick", action="store_true", help="fewer steps and one repeat")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for both sides, e.g. model.d=128")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    roofline.clock = roofline.CLOCKS[args.clock]
    if args.cpu_chunk_budget is not None:
        chunks.CPU_CHUNK_BUDGET = args.cpu_chunk_budget
    overrides = dict(kv.split("=", 1) for kv in args.set)
    repeats = args.repeats or (1 if args.quick else 2)
    archs = [a for a in args.archs.split(",") if a]
    try:
        import grokray.models.transformer  # noqa: F401
    except ImportError:
        archs = [a for a in archs if a != "transformer"]
    rows = []
    print(f"torch {torch.__version__}, {args.threads} thread(s), repeats {repeats}, "
          f"overrides {overrides or '-'}, clock {args.clock}, CPU chunk budget "
          f"{chunks.CPU_CHUNK_BUDGET}, load average {os.getloadavg()[0]:.1f}", flush=True)
    rate_cache: dict = {}
    print(f"sgemm 1024^3: {cube_rate() / 1e9:.1f} GFLOP/s", flush=True)
    print(f"{'arch':12s} {'group':6s} {'S':>3s} {'steps':>5s} {'ref s-st/s':>11s} "
          f"{'grokray s-st/s':>15s} {'ratio':>6s} {'work ratio':>10s} | {'ref GF/s':>8s} "
          f"{'roof':>5s} | {'GF/s':>6s} {'limit GF/s':>10s} {'roof':>5s}", flush=True)
    for arch in archs:
        for group in args.groups.split(","):
            task = make_task(group)
            for S in (int(s) for s in args.seeds.split(",")):
                steps = args.steps or (QUICK_STEPS if args.quick else STEPS)[arch]
                cfg = make_cfg(arch, group, S, steps, overrides)
                grokray_run(make_cfg(arch, group, 1, 2, overrides))  # warm imports and caches
                ref, ours = [], []
                for r in range(repeats):
                    order = (reference_run, grokray_run) if r % 2 == 0 else \
                        (grokray_run, reference_run)
                    for fn in order:
                        wall = fn(cfg, task) if fn is reference_run else fn(cfg)
                        (ref if fn is reference_run else ours).append(S * steps / wall)
                rr, oo = statistics.median(ref), statistics.median(ours)
                wr = work_ratio(cfg, task)
                roof = {}
                for side, rate in (("ref", rr), ("ours", oo)):
                    with GemmCounter() as gc:
                        reference_run(cfg, task) if side == "ref" else grokray_run(cfg)
                    t_gemm = gemm_seconds(gc.shapes, sgemm_rates(gc.shapes, cache=rate_cache))
                    wall = S * steps / rate
                    roof[side] = (gc.flops / wall, gc.flops / t_gemm, t_gemm / wall)
                rows.append((arch, group, S, steps, rr, oo, oo / rr, wr, roof))
                wtxt = "-" if wr is None else f"{wr:.2f}x"
                (rg, _, rf), (og, ol, of) = roof["ref"], roof["ours"]
                print(f"{arch:12s} {group:6s} {S:3d} {steps:5d} {rr:11.1f} {oo:15.1f} "
                      f"{oo / rr:5.2f}x {wtxt:>10s} | {rg / 1e9:8.1f} {rf:5.2f} | "
                      f"{og / 1e9:6.1f} {ol / 1e9:10.1f} {of:5.2f}", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
