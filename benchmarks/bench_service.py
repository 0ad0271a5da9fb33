"""The sweep service under a lab's load: simulated users submit sweeps through the HTTP API of a
`grokray serve --no-runner` process (real HTTP on loopback), against SQLite or PostgreSQL.

    python benchmarks/bench_service.py                          # SQLite, 50 users, 1,000 sweeps
    python benchmarks/bench_service.py --db postgresql          # a throwaway PostgreSQL server
    python benchmarks/bench_service.py --db postgresql://u@h/db # an existing one (empty db)

Phase 1: every user (a thread) submits its share of the sweeps, one after another, each with its
own spec text (one distinct spec per user, as a lab's users each submit their own: the first of
each is validated and priced, the rest answer from the service's cache of that work), after the
service has loaded its spec checker and cost model (/api/health's `ready`).
Phase 2: with every sweep queued, every user lists the queue `--lists` times (all of it: 1,000
rows). Then `--identities` rows are indexed in the lab's identity table, and `grokray queue`
(the CLI, a fresh process) and the API's listing are timed once more.

Printed: submissions/s (phase 1's submissions over its wall time), p50/p99 latency of a
submission and of a listing, and the timings at the identity count. Nothing asserts on time.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SPEC = """name: {name}
out: results
config: {{group: Z{p}, arch: mlp, train_frac: 0.5, device: cpu}}
axes: {{optim.lr: [0.001, 0.002, 0.004], optim.weight_decay: [0.1, 1.0]}}
seeds: 3
steps: 500
eval_every: 50
resources: {{cpu: 1, gpu: 0}}
"""
PRIMES = [5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71, 73, 79, 83, 89,
          97, 101, 103, 107, 109, 113, 127, 131, 137, 139, 149, 151, 157, 163, 167, 173, 179,
          181, 191, 193, 197, 199, 211, 223, 227, 229, 233, 239]


def _postgres():  # noqa: ANN202 - the tests' throwaway server (tests/helpers/postgres.py)
    spec = importlib.util.spec_from_file_location(
        "grokray_pg_helper", ROOT / "tests" / "helpers" / "postgres.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    why = mod.missing()
    if why:
        sys.exit(f"bench_service: {why}")
    server = mod.Server()
    server.start()
    return server


def _request(url: str, token: str, method: str = "GET", body: bytes | None = None,
             headers: dict | None = None) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, method=method,
                                 headers={"Authorization": f"Bearer {token}", **(headers or {})})
    with urllib.request.urlopen(req, timeout=600) as r:
        return r.status, r.read()


def _pct(xs: list[float]) -> dict[str, float]:
    a = np.asarray(xs) * 1000
    return {"p50_ms": round(float(np.percentile(a, 50)), 1),
            "p99_ms": round(float(np.percentile(a, 99)), 1), "n": len(xs)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", default="sqlite",
                    help="sqlite (a fresh file), postgresql (a throwaway server) or a URL")
    ap.add_argument("--users", type=int, default=50)
    ap.add_argument("--sweeps", type=int, default=1000)
    ap.add_argument("--lists", type=int, default=4, help="queue listings per user in phase 2")
    ap.add_argument("--identities", type=int, default=100_000)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()

    from grokray.service.state import State

    work = Path(tempfile.mkdtemp(prefix="grokray-bench-service-"))
    server = None
    if args.db == "sqlite":
        db = str(work / "service.db")
    elif args.db == "postgresql":
        server = _postgres()
        db = server.url
    else:
        db = args.db
    st = State.open(db)
    tokens = [st.add_user(f"user{i:02d}")[1] for i in range(args.users)]
    proc = subprocess.Popen([sys.executable, "-m", "grokray.cli", "serve", "--db", db,
                             "--store", str(work / "store"), "--port", "0", "--no-runner"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = proc.stdout.readline()
        url = line.split("listening on ", 1)[1].split()[0]
        while not json.loads(urllib.request.urlopen(f"{url}/api/health").read())["ready"]:
            time.sleep(0.2)  # the service loads its spec checker and cost model at start
        per_user = [args.sweeps // args.users + (i < args.sweeps % args.users)
                    for i in range(args.users)]

        def submitter(i: int) -> list[float]:
            text = SPEC.format(name=f"u{i:02d}", p=PRIMES[i % len(PRIMES)]).encode()
            out = []
            for j in range(per_user[i]):
                t0 = time.perf_counter()
                status, _ = _request(f"{url}/api/sweeps?source=u{i:02d}.yaml&priority={j % 3}",
                                     tokens[i], "POST", text,
                                     {"Idempotency-Key": uuid.uuid4().hex})
                out.append(time.perf_counter() - t0)
                assert status == 201, status
            return out

        t0 = time.perf_counter()
        with cf.ThreadPoolExecutor(args.users) as pool:
            submit_lat = [x for xs in pool.map(submitter, range(args.users)) for x in xs]
        submit_wall = time.perf_counter() - t0
        stored = len(st.list_queue())
        assert stored == args.sweeps, (stored, args.sweeps)

        def lister(i: int) -> list[float]:
            out = []
            for _ in range(args.lists):
                t = time.perf_counter()
                status, body = _request(f"{url}/api/sweeps", tokens[i])
                out.append(time.perf_counter() - t)
                assert status == 200 and len(json.loads(body)["sweeps"]) == args.sweeps
            return out

        t0 = time.perf_counter()
        with cf.ThreadPoolExecutor(args.users) as pool:
            list_lat = [x for xs in pool.map(lister, range(args.users)) for x in xs]
        list_wall = time.perf_counter() - t0

        # the lab's store at `identities` rows: the index the reuse lookup reads
        from sqlalchemy import insert

        from grokray.service.db import Identity, now

        t0 = time.perf_counter()
        rows = [{"config_hash": f"{k // 5:016x}", "seed": k % 5, "semantics": "1",
                 "device_kind": "cpu", "status": "ok", "sweep_id": None,
                 "sweep_dir": f"{work}/store/user{k % args.users:02d}/x", "owner_id": None,
                 "source_dir": None, "cpu_s": 1.0, "gpu_s": 0.0, "created_at": now()}
                for k in range(args.identities)]
        with st.engine.begin() as c:
            for k in range(0, len(rows), 10_000):
                c.execute(insert(Identity), rows[k:k + 10_000])
        index_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        _request(f"{url}/api/sweeps", tokens[0])
        api_list_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        hits = st.find_identities([(f"{k:016x}", 0) for k in range(0, 1000)])
        lookup_s = time.perf_counter() - t0
        assert len(hits) == 1000
        env = {**os.environ, "GROKRAY_SERVER": url, "GROKRAY_TOKEN": tokens[0]}
        t0 = time.perf_counter()
        cli = subprocess.run([sys.executable, "-m", "grokray.cli", "queue"], env=env,
                             capture_output=True, text=True, timeout=600)
        cli_s = time.perf_counter() - t0
        assert cli.returncode == 0 and len(cli.stdout.splitlines()) == args.sweeps + 1, \
            cli.stderr
        out = {
            "db": st.engine.dialect.name, "users": args.users, "sweeps": args.sweeps,
            "submissions_per_s": round(args.sweeps / submit_wall, 1),
            "submit": _pct(submit_lat), "submit_wall_s": round(submit_wall, 1),
            "queue_list_1000": _pct(list_lat), "list_wall_s": round(list_wall, 1),
            "identities": args.identities, "index_insert_s": round(index_s, 1),
            "api_list_at_identities_s": round(api_list_s, 3),
            "grokray_queue_cli_s": round(cli_s, 2),
            "identity_lookup_1000_s": round(lookup_s, 3),
            "load_avg": [round(x, 1) for x in os.getloadavg()],
        }
    finally:
        proc.kill()
        proc.wait()
        st.close()
        if server is not None:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
