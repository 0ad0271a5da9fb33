"""RFM seconds per iteration: grokray's RFM vs a plain reference implementation, one process.

    python benchmarks/bench_rfm.py                       # p=61, add, train 0.5, gaussian, 4 iters
    python benchmarks/bench_rfm.py --p 31 --iters 3 --threads 2 --json

Both run the same math on the same split (float64, ridge 0, L = 2.5, centered AGOP, s = 1/2):
- plain: the straightforward way (as public RFM code does it): kernel from Mahalanobis
  distances, `np.linalg.solve`, the per-sample Jacobians as a dense [n, c, d] tensor from
  K^T @ (alpha (x) XM) (n^2 c d flops), the AGOP summed over small batches of samples, and
  `scipy.linalg.sqrtm` for the square root;
- grokray: `grokray.rfm.model.RFM` (Cholesky, the grouped one-hot AGOP, eigh).
Printed: wall and CPU seconds per iteration of each (median over iterations; CPU time is the
steadier figure on a shared machine), the ratios, and the relative difference of the final M
(they must agree). Target: grokray <= 0.4 s/iter at p = 61.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import scipy.linalg
import torch

from grokray.rfm.model import RFM, one_hot_pairs


def plain_rfm(Xtr, Ytr, Xva, Yva, iters, L=2.5, batch=2):
    """A direct, unoptimized RFM -> (M, wall s and CPU s per iteration, val acc per iteration)."""
    n, d = Xtr.shape
    M = torch.eye(d, dtype=torch.float64)
    times, cpus, accs = [], [], []

    def gauss(A, B, M):
        an = ((A @ M) * A).sum(1, keepdim=True)
        bn = ((B @ M) * B).sum(1, keepdim=True).T
        D = an + bn - 2 * A @ M @ B.T
        return torch.exp(-D.clamp(min=0) / (2 * L * L))

    for _ in range(iters):
        t0, c0 = time.perf_counter(), time.process_time()
        K = gauss(Xtr, Xtr, M)
        sol = torch.from_numpy(np.linalg.solve(K.numpy(), Ytr.numpy()))  # [n, c]
        Kv = gauss(Xva, Xtr, M)
        accs.append(float(((Kv @ sol).argmax(1) == Yva.argmax(1)).double().mean()))
        c = sol.shape[1]
        XM = Xtr @ M
        S = K.T @ (sol[:, :, None] * XM[:, None, :]).reshape(n, c * d)  # [n, c*d]
        F = K @ sol  # [n, c]
        G = (S.reshape(n, c, d) - F[:, :, None] * XM[:, None, :]) * (-1.0 / L**2)
        G = G - G.mean(0)
        A = torch.zeros(d, d, dtype=torch.float64)
        for g in torch.split(G, batch):
            A += (g.transpose(1, 2) @ g).sum(0)
        A /= n
        M = torch.from_numpy(np.real(scipy.linalg.sqrtm(A.numpy())))
        times.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return M, times, cpus, accs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--p", type=int, default=61)
    ap.add_argument("--train-frac", type=float, default=0.5)
    ap.add_argument("--iters", type=int, default=4, help="RFM iterations timed per method")
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    p = args.p
    a = torch.arange(p).repeat_interleave(p)
    b = torch.arange(p).repeat(p)
    y = (a + b) % p
    X = one_hot_pairs(a, b, p)
    perm = torch.from_numpy(np.random.default_rng(0).permutation(p * p))
    n = int(round(args.train_frac * p * p))
    tr, va = perm[:n], perm[n:]
    Y = torch.nn.functional.one_hot(y, p).double()

    M_ref, t_ref, c_ref, acc_ref = plain_rfm(X[tr], Y[tr], X[va], Y[va], args.iters)
    # grokray: iters - 1 updates -> iters solves; per-iteration time recorded by fit
    est = RFM(iters=args.iters, centering=True).fit(X[tr], y[tr], eval_set=(X[va], y[va]))
    t_ours = [h["wall_s"] for h in est.history_[:-1]]  # the iterations that include an update
    c_ours = [h["cpu_s"] for h in est.history_[:-1]]
    diff = float((est.M_ - M_ref).norm() / M_ref.norm())
    out = {
        "p": p, "n_train": n, "iters": args.iters, "threads": torch.get_num_threads(),
        "plain_s_per_iter": statistics.median(t_ref),
        "grokray_s_per_iter": statistics.median(t_ours),
        "speedup": statistics.median(t_ref) / statistics.median(t_ours),
        "plain_cpu_s_per_iter": statistics.median(c_ref),
        "grokray_cpu_s_per_iter": statistics.median(c_ours),
        "cpu_speedup": statistics.median(c_ref) / statistics.median(c_ours),
        "final_M_rel_diff": diff,
        "val_acc_plain": acc_ref, "val_acc_grokray": [h["val_acc"] for h in est.history_[:-1]],
    }
    if args.json:
        print(json.dumps(out))
        return
    print(f"RFM p={p} add train {args.train_frac} gaussian, {args.iters} iterations, "
          f"{out['threads']} threads")
    print("                    wall s/iter   CPU s/iter (all threads)")
    for name, key in (("plain reference", "plain"), ("grokray RFM    ", "grokray")):
        print(f"  {name} : {out[key + '_s_per_iter']:11.3f}   {out[key + '_cpu_s_per_iter']:.3f}")
    print(f"  speedup         : {out['speedup']:10.2f}x   {out['cpu_speedup']:.2f}x"
          "   (target: grokray <= 0.4 wall s/iter on an idle machine)")
    print(f"  final M rel diff: {diff:.2e}")


if __name__ == "__main__":
    main()
