"""The results store at 10^3, 10^4 and 10^5 trials: time and peak memory of what reads it.

    nice -n 10 python benchmarks/bench_store.py [--dir DIR] [--sizes 1000 10000 100000]
        [--s3] [--s3-max N] [--keep]

Each store holds N trials of the ledger's shape (3 seeds, 10,000 steps with an eval every 100:
100 curve rows per seed; 3N trials rows, 300N curve rows) in the real schema: the rows of 100
trials are made by the real code path (`tests/fixtures/sweepdir.py`'s TrialConfigs and
TrialResults through `grokray.schema.trial_frame` / `curve_frame`: training replaced by
synthetic curves), and every further block of 100 is a copy of those rows under new identities
(config_hash and run_id; config_json stays the original's). Rows are written in bulk as
compacted parts (`grokray.sweep.compact.write_part`), the layout `grokray compact` leaves.

For each store, each in a fresh process (its peak RSS is that process's): `grokray status`,
`grokray sweep SPEC --dry-run` of a 12-config spec into the store's dir, `grokray.load`
(the trials table), the curves of one arm (`Sweep.curves_of`), the dashboard's first page
(index the dir, then the overview and the state the page asks first) and its curves view (the
median band of val_acc over every run), and the same on an S3 endpoint (`--s3`: a moto_server
on loopback, the store uploaded; sizes up to `--s3-max`, 10^4 by default). Targets at 10^5:
status, dry run and the dashboard's first page < 2 s, load of the trials < 5 s, nothing over
2 GB resident. Each row gives the operation's CPU seconds (what other processes' load does not
inflate), its wall seconds, the whole process's wall (interpreter start and imports included)
and its peak RSS.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS, STEPS, EVALS, BLOCK = 3, 10_000, 100, 100


def _fixture(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "fixtures" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _block():
    """The trials and curves tables of BLOCK trials, by the real code path."""
    import pyarrow as pa

    from grokray.schema import curve_frame, trial_frame

    sweepdir = _fixture("sweepdir")
    run_id = "20260101T000000000000Z-0000"
    trials, curves = [], []
    for i in range(BLOCK):
        cfg = sweepdir.config(i, SEEDS, STEPS, EVALS)
        r = sweepdir.result(i, cfg, EVALS)
        trials.append(pa.Table.from_pandas(trial_frame(r, "bench", run_id),
                                           preserve_index=False))
        c = curve_frame(r, "bench", run_id)
        if len(c):
            curves.append(pa.Table.from_pandas(c, preserve_index=False))
    return (pa.concat_tables(trials, promote_options="permissive"),
            pa.concat_tables(curves, promote_options="permissive"))


def _renamed(t, k: int):
    """`t` with every config_hash and run_id made new for copy k (k = 0: as made)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if k == 0:
        return t
    h = t.column("config_hash").combine_chunks().dictionary_encode()
    new = [hashlib.sha256(f"{x}/{k}".encode()).hexdigest()[:16] for x in h.dictionary.to_pylist()]
    col = pc.take(pa.array(new), h.indices)
    t = t.set_column(t.column_names.index("config_hash"), "config_hash", col)
    run = pa.array([f"20260101T000000000000Z-{k:04x}"] * t.num_rows)
    return t.set_column(t.column_names.index("run_id"), "run_id", run)


def build(out: Path, n: int, block) -> float:
    """Write a store of n trials (parts of 160 blocks, 48,000 trials rows); returns the
    seconds it took."""
    import pyarrow as pa

    from grokray.sweep import compact

    t0 = time.perf_counter()
    trials, curves = block
    copies = n // BLOCK
    per_part = 160
    for start in range(0, copies, per_part):
        ks = range(start, min(copies, start + per_part))
        compact.write_part(out, pa.concat_tables([_renamed(trials, k) for k in ks]),
                           pa.concat_tables([_renamed(curves, k) for k in ks]))
    sweepdir = _fixture("sweepdir")
    sweepdir.write_plan(str(out), trials=n, seeds=SEEDS)
    return time.perf_counter() - t0


def spec_for(out: Path) -> Path:
    """A 12-config spec (3 groups x 2 archs x 2 learning rates) whose sweep dir is `out`."""
    spec = out.parent / f"{out.name}.yaml"
    spec.write_text(
        f"name: {out.name}\nout: {out.parent}\nconfig:\n  device: cpu\n"
        "axes:\n  group: [Z5, S3, Z7]\n  arch: [mlp, forge]\n  optim.lr: [0.001, 0.003]\n"
        f"seeds: {SEEDS}\nsteps: {STEPS}\neval_every: {STEPS // EVALS}\n")
    return spec


# ----------------------------------------------------------------------------- one measurement


def _op(op: str, target: str, extra: str | None) -> dict:
    """Run one operation in this process (its modules imported first: the process's wall,
    `measure`, includes them); its seconds and this process's peak RSS."""
    import contextlib
    import io

    if op == "status":
        from grokray.commands import status as _status
    elif op == "dry_run":
        from grokray.cli import main
        from grokray.sweep import driver, plan  # noqa: F401 - imported before the clock starts
    elif op in ("load", "curves_arm"):
        import grokray
        from grokray_analysis import load as _load  # noqa: F401
    else:
        from grokray_analysis.dashboard import views
        from grokray_analysis.dashboard.server import Dashboard
    info: dict = {}
    t0, c0 = time.perf_counter(), time.process_time()
    if op == "status":
        s = _status.status_tables(target)
        info["rows"] = s["rows"]
        _status.render_status(target, s)
    elif op == "dry_run":
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            info["rc"] = main(["sweep", extra, "--dry-run", "--out", target])
    elif op == "load":
        info["rows"] = len(grokray.load(target).trials)
    elif op == "curves_arm":
        sw = grokray.load(target)
        t1, c1 = time.perf_counter(), time.process_time()
        info["rows"] = len(sw.curves_of({"arm": "forge"}))
        info["part_s"], info["part_cpu_s"] = time.perf_counter() - t1, time.process_time() - c1
    elif op in ("dash_first", "dash_curves"):
        dash = Dashboard([target], n_boot=100)
        dash.refresh()
        ix = dash.sweeps[0]
        info["rows"] = views.overview(ix)["rows"]
        dash.state()
        if op == "dash_curves":
            t1, c1 = time.perf_counter(), time.process_time()
            info["bands"] = len(views.curves(ix, "val_acc", {})["bands"])
            info["part_s"] = time.perf_counter() - t1
            info["part_cpu_s"] = time.process_time() - c1
    else:
        raise SystemExit(f"unknown op {op}")
    info["s"] = time.perf_counter() - t0
    info["cpu_s"] = time.process_time() - c0
    info["rss_mb"] = _peak_rss_mb()
    return info


def _peak_rss_mb() -> float:
    """This process's peak RSS: VmHWM (since its exec; getrusage's ru_maxrss would carry the
    forking parent's), ru_maxrss where there is no /proc."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(op: str, target: str, extra: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--op", op, "--target", target]
    if extra:
        cmd += ["--extra", extra]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    wall = time.perf_counter() - t0
    if r.returncode:
        return {"error": (r.stderr.strip().splitlines() or ["?"])[-1], "wall_s": wall}
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["wall_s"] = wall
    return out


OPS = [("status", "status"), ("dry_run", "dry run"), ("load", "load (trials)"),
       ("curves_arm", "load + curves of one arm"), ("dash_first", "dashboard first page"),
       ("dash_curves", "dashboard first page + curves view")]


def _row(size: int, where: str, name: str, op: str, m: dict) -> str:
    if "error" in m:
        return f"| {size:,} | {where} | {name} | error: {m['error'][:80]} | | | |"
    extra = ""
    if "part_s" in m:
        what = "curves" if "bands" not in m else "view"
        extra = f" ({what}: {m['part_cpu_s']:.2f} CPU s, {m['part_s']:.2f} s)"
    return (f"| {size:,} | {where} | {name} | {m['cpu_s']:.2f} | {m['s']:.2f}{extra} | "
            f"{m['wall_s']:.1f} | {m['rss_mb']:.0f} |")


def _moto():
    """A moto_server on a free loopback port: (process, query for a URL, S3 filesystem)."""
    import socket

    import pyarrow.fs as pafs

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1"})
    exe = shutil.which("moto_server") or str(Path(sys.executable).parent / "moto_server")
    proc = subprocess.Popen([exe, "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    fs = pafs.S3FileSystem(endpoint_override=f"127.0.0.1:{port}", scheme="http",
                           region="us-east-1", access_key="testing", secret_key="testing",
                           allow_bucket_creation=True)
    for _ in range(300):
        try:
            fs.create_dir("bench")
            break
        except OSError:
            time.sleep(0.2)
    return proc, f"endpoint_override=127.0.0.1:{port}&scheme=http&region=us-east-1", fs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", help="where the stores are built (default: a temporary dir)")
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    ap.add_argument("--s3", action="store_true", help="also on a moto_server S3 endpoint "
                                                      "(sizes up to --s3-max)")
    ap.add_argument("--s3-max", type=int, default=10_000, metavar="N",
                    help="the largest store measured on S3 too (default 10,000: uploading 10^5 "
                         "trials to moto_server takes minutes)")
    ap.add_argument("--keep", action="store_true", help="keep the built stores")
    ap.add_argument("--op", help=argparse.SUPPRESS)
    ap.add_argument("--target", help=argparse.SUPPRESS)
    ap.add_argument("--extra", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.op:
        print(json.dumps(_op(a.op, a.target, a.extra)))
        return 0
    base = Path(a.dir or tempfile.mkdtemp(prefix="grokray-bench-store-"))
    base.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    block = _block()
    print(f"made {BLOCK} trials by the real code path in {time.perf_counter() - t0:.0f} s",
          flush=True)
    lines = ["| trials | where | what | op CPU s | op wall s | process wall s | peak RSS MB |",
             "|---|---|---|---|---|---|---|"]
    moto = _moto() if a.s3 else None
    try:
        for n in a.sizes:
            out = base / f"store{n}"
            if not (out / "trials").is_dir():
                took = build(out, n, block)
                mb = sum(f.stat().st_size for f in out.rglob("*.parquet")) / 1e6
                print(f"built {n:,} trials ({3 * n:,} rows, {300 * n:,} curve rows, {mb:.0f} MB)"
                      f" in {took:.0f} s", flush=True)
            spec = spec_for(out)
            wheres = [("disk", str(out))]
            if moto is not None and n <= a.s3_max:
                proc, query, fs = moto
                t1 = time.perf_counter()
                import pyarrow.fs as pafs

                pafs.copy_files(str(out), f"bench/store{n}",
                                source_filesystem=pafs.LocalFileSystem(),
                                destination_filesystem=fs)
                print(f"uploaded store{n} in {time.perf_counter() - t1:.0f} s", flush=True)
                wheres.append(("s3", f"s3://bench/store{n}?{query}"))
            for where, target in wheres:
                for op, name in OPS:
                    if op == "dry_run" and where == "s3":
                        target_root = target.replace(f"/store{n}?", "?")
                        m = measure(op, target_root, str(spec))
                    elif op == "dry_run":
                        m = measure(op, str(out.parent), str(spec))
                    else:
                        m = measure(op, target)
                    line = _row(n, where, name, op, m)
                    lines.append(line)
                    print(line, flush=True)
            if not a.keep:
                shutil.rmtree(out)
    finally:
        if moto is not None:
            moto[0].terminate()
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
