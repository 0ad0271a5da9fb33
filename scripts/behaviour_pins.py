"""Behaviour pins of a checkout: what a behaviour-preserving refactor must leave identical.

    python scripts/behaviour_pins.py OUTDIR [--repo CHECKOUT] [--skip-runs]
    python scripts/behaviour_pins.py --compare BASELINE_DIR OTHER_DIR

Run it with any virtual environment of the project; `--repo` (default: this script's
checkout) is put first on PYTHONPATH of every command, with its analysis/ and sweeps/ as
grokray_analysis and grokray_sweeps, so that checkout's code and specs are what run
(OUTDIR/imported_from.txt names the grokray, the sweeps folder and the grokray_analysis
used). It writes, under OUTDIR:

- config_hashes.json: every config_hash of every shipped spec under REPO/sweeps/ (not run/;
  the grid's trials in order; a search: its base config; a grid over PIN_MAX_POINTS: its
  count alone)
- dry_run/<spec>.json: `grokray sweep SPEC --dry-run --json --out <tmp>` of every shipped spec,
  with the host-dependent cost figures removed (HOST_KEYS: they follow this host's measured
  sgemm rate) and machine paths replaced by <repo>/<out>
- corpus.json: the malformed-spec corpus of tests/unit/test_spec_corpus.py: each spec's exit
  code and stderr line of `grokray sweep FILE --dry-run`
- reproduce/<sweep>.trials.csv and .curves.csv: the rows of `grokray reproduce --scale cpu
  --only REPRODUCE_SWEEPS --num-cpus 2` (on Ray), sorted by identity, floats written exactly
  (repr), without the columns that vary from run to run (RUN_COLUMNS)
- packed/: the same for a small grid run on Ray with `--pack auto` (PACK_SPEC)
- status.json: `grokray status --json` of one reproduced sweep (paths replaced)
- slurm_script.sh: the sbatch script of `grokray slurm sweeps/smoke.yaml --dry-run` (paths
  replaced; the cost lines after the script are host-dependent and kept apart in
  slurm_dry_run_rest.txt, not compared)

`--compare A B` lists every file that differs (exit 1) or says they are identical (exit 0);
files under raw/ are not compared.
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPRODUCE_SWEEPS = ["nonabelian_cpu", "axioms_cpu", "rfm_cpu"]
"""three cheap sweeps of the CPU ledger (about 2 min of trials on 2 cores)"""
PIN_MAX_POINTS = 20000
HOST_KEYS = ["cpu_hours_upper", "cpu_hours_expected", "wall_hours_upper", "wall_hours_expected"]
HOST_COST_KEYS = ["host_sgemm_gflops", "host_sgemm_source"]
RUN_COLUMNS = ["run_id", "wall_s", "started_at", "finished_at", "git_commit", "hostname",
               "ray_node_id", "grokray_version", "cpu_s", "cuda_visible_devices",
               "metric_iter_s"]
"""columns that differ between two runs of the same trials (time, host, run, commit; RFM's
seconds per iteration)"""
PACK_SPEC = """name: pinpack
config: {group: Z5, arch: mlp, optim: {lr: 0.001}}
steps: 300
eval_every: 50
seeds: 2
resources: {cpu: 1}
axes:
  optim.weight_decay: [0.0, 0.5, 1.0, 2.0]
"""


_SHIM: dict[Path, str] = {}


def pythonpath(repo: Path) -> str:
    """`repo`, then a folder naming its analysis/ and sweeps/ as the packages an editable
    install maps them to (grokray_analysis, grokray_sweeps): the checkout's, not the venv's."""
    if repo not in _SHIM:
        shim = Path(tempfile.mkdtemp(prefix="pins-path-"))
        (shim / "grokray_analysis").symlink_to(repo / "analysis")
        (shim / "grokray_sweeps").symlink_to(repo / "sweeps")
        _SHIM[repo] = f"{repo}{os.pathsep}{shim}"
    return _SHIM[repo]


def run(cmd: list[str], repo: Path, env_extra: dict | None = None,
        check: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=pythonpath(repo), **(env_extra or {}))
    env.pop("SLURM_JOB_ID", None)
    p = subprocess.run(cmd, cwd=repo, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-3000:]}")
    return p


def grokray(repo: Path) -> list[str]:
    return [sys.executable, "-c", "import sys; from grokray.cli import main; "
            "sys.exit(main(sys.argv[1:]))"]


def normalise(text: str, subs: dict[str, str]) -> str:
    for a, b in sorted(subs.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(a, b)
    return text


def strip_cost(obj: dict) -> dict:
    for k in HOST_KEYS:
        obj.pop(k, None)
    for k in HOST_COST_KEYS:
        obj.get("cost_model", {}).pop(k, None)
    return obj


def spec_files(repo: Path) -> list[Path]:
    """the shipped sweep specs (sweeps/run/ holds `grokray run` configs, not specs)"""
    return sorted(p for p in (repo / "sweeps").rglob("*.yaml")
                  if p.relative_to(repo / "sweeps").parts[0] != "run")


def pin_hashes(repo: Path, out: Path) -> None:
    code = (
        "import json, sys\n"
        "from grokray.sweep.spec import load_spec\n"
        "out = {}\n"
        "for path in sys.argv[2:]:\n"
        "    s = load_spec(path)\n"
        "    rel = path.split('/sweeps/', 1)[1]\n"
        "    if s.search is not None:\n"
        "        out[rel] = {'search_base': s.base.config_hash()}\n"
        f"    elif s.n_points > {PIN_MAX_POINTS}:\n"
        "        out[rel] = {'grid_points': s.n_points}\n"
        "    else:\n"
        "        out[rel] = [c.config_hash() for c in s.trials()]\n"
        "json.dump(out, open(sys.argv[1], 'w'), indent=1, sort_keys=True)\n"
    )
    run([sys.executable, "-c", code, str(out / "config_hashes.json"),
         *map(str, spec_files(repo))], repo)


def pin_dry_runs(repo: Path, out: Path, subs: dict[str, str]) -> None:
    """Every spec's dry run in one process (the CLI's main, stdout captured): a process per
    spec took 30 s each on a loaded 2-core machine."""
    d = out / "dry_run"
    d.mkdir()
    tmp = tempfile.mkdtemp(prefix="pins-dry-")
    subs = {**subs, tmp: "<out>"}
    code = (
        "import contextlib, io, json, sys\n"
        "from grokray.cli import main\n"
        "res = {}\n"
        "for path in sys.argv[3:]:\n"
        "    o = io.StringIO()\n"
        "    with contextlib.redirect_stdout(o):\n"
        "        rc = main(['sweep', path, '--dry-run', '--json', '--out', sys.argv[2]])\n"
        "    assert rc == 0, (path, rc)\n"
        "    res[path] = json.loads(o.getvalue())\n"
        "json.dump(res, open(sys.argv[1], 'w'))\n"
    )
    raw = Path(tmp) / "dry.json"
    run([sys.executable, "-c", code, str(raw), tmp, *map(str, spec_files(repo))], repo)
    got = json.loads(raw.read_text())
    for f in spec_files(repo):
        rel = f.relative_to(repo / "sweeps").with_suffix("").as_posix().replace("/", "__")
        obj = strip_cost(got[str(f)])
        (d / f"{rel}.json").write_text(
            normalise(json.dumps(obj, indent=1, sort_keys=True), subs) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)


def pin_corpus(repo: Path, out: Path) -> None:
    code = (
        "import json, sys, tempfile, os, contextlib, io\n"
        "sys.path.insert(0, 'tests/unit')\n"
        "from test_spec_corpus import CORPUS\n"
        "from grokray.cli import main\n"
        "res = []\n"
        "tmp = tempfile.mkdtemp()\n"
        "for i, (text, key, frag) in enumerate(CORPUS):\n"
        "    p = os.path.join(tmp, 'spec.yaml')\n"
        "    with open(p, 'wb') as f:\n"
        "        f.write(text if isinstance(text, bytes) else text.encode())\n"
        "    err, o = io.StringIO(), io.StringIO()\n"
        "    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(o):\n"
        "        try:\n"
        "            rc = main(['sweep', p, '--dry-run', '--out', os.path.join(tmp, 'o')])\n"
        "        except SystemExit as e:\n"
        "            rc = e.code\n"
        "    res.append({'i': i, 'rc': rc, 'stderr': err.getvalue().replace(tmp, '<tmp>')})\n"
        "json.dump(res, open(sys.argv[1], 'w'), indent=1)\n"
    )
    run([sys.executable, "-c", code, str(out / "corpus.json")], repo)


def dump_rows(sweep_dir: Path, dest: Path, name: str) -> None:
    import pandas as pd

    for table in ("trials", "curves"):
        files = sorted((sweep_dir / table).glob("*.parquet"))
        df = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True)
        df = df.drop(columns=[c for c in RUN_COLUMNS if c in df.columns])
        keys = [k for k in ("config_hash", "seed", "step") if k in df.columns]
        df = df.sort_values(keys).reset_index(drop=True)
        df = df[sorted(df.columns)]
        # floats exactly: repr of every value (float64 round-trips)
        text = df.to_csv(index=False, float_format=lambda x: repr(float(x)))
        (dest / f"{name}.{table}.csv").write_text(text)
        (dest / f"{name}.{table}.dtypes.txt").write_text(df.dtypes.to_string() + "\n")


def pin_reproduce(repo: Path, out: Path, subs: dict[str, str]) -> None:
    d = out / "reproduce"
    d.mkdir()
    tmp = Path(tempfile.mkdtemp(prefix="pins-repro-"))
    p = run([*grokray(repo), "reproduce", "--scale", "cpu", "--only", *REPRODUCE_SWEEPS,
             "--num-cpus", "2", "--plain", "--out", str(tmp)], repo)
    (out / "raw").mkdir(exist_ok=True)
    (out / "raw" / "reproduce.stdout.txt").write_text(p.stdout)
    (out / "raw" / "reproduce.stderr.txt").write_text(p.stderr)
    for name in REPRODUCE_SWEEPS:
        dump_rows(tmp / name, d, name)
    st = run([*grokray(repo), "status", "--json", str(tmp / REPRODUCE_SWEEPS[0])], repo)
    obj = json.loads(st.stdout)
    obj.pop("run_ids", None)  # new each run
    (out / "status.json").write_text(
        normalise(json.dumps(obj, indent=1, sort_keys=True), {**subs, str(tmp): "<out>"}) + "\n")
    shutil.rmtree(tmp, ignore_errors=True)


def pin_packed(repo: Path, out: Path) -> None:
    d = out / "packed"
    d.mkdir()
    tmp = Path(tempfile.mkdtemp(prefix="pins-pack-"))
    spec = tmp / "pinpack.yaml"
    spec.write_text(PACK_SPEC)
    dry = run([*grokray(repo), "sweep", str(spec), "--dry-run", "--json", "--pack", "auto",
               "--num-cpus", "2", "--out", str(tmp)], repo)
    obj = strip_cost(json.loads(dry.stdout))
    (d / "dry_run.json").write_text(
        normalise(json.dumps(obj, indent=1, sort_keys=True), {str(tmp): "<out>"}) + "\n")
    p = run([*grokray(repo), "sweep", str(spec), "--pack", "auto", "--num-cpus", "2",
             "--plain", "--no-summary", "--out", str(tmp)], repo)
    (out / "raw").mkdir(exist_ok=True)
    (out / "raw" / "packed.stdout.txt").write_text(p.stdout)
    dump_rows(tmp / "pinpack", d, "pinpack")
    shutil.rmtree(tmp, ignore_errors=True)


def pin_slurm(repo: Path, out: Path, subs: dict[str, str]) -> None:
    tmp = tempfile.mkdtemp(prefix="pins-slurm-")
    p = run([*grokray(repo), "slurm", "sweeps/smoke.yaml", "--dry-run", "--nodes", "2",
             "--time", "00:30:00", "--out", tmp], repo)
    subs = {**subs, tmp: "<out>", sys.prefix: "<prefix>"}
    script, _, rest = p.stdout.partition("# ---- dry run")
    (out / "slurm_script.sh").write_text(normalise(script, subs))
    (out / "raw").mkdir(exist_ok=True)
    (out / "raw" / "slurm_dry_run_rest.txt").write_text(normalise(rest, subs))
    shutil.rmtree(tmp, ignore_errors=True)


def _difference(a: Path, b: Path) -> str:
    """How two pinned files differ: for rows, whether they are identical but for columns that
    only one side has (a column added on the way) or that vary by run (RUN_COLUMNS)."""
    if a.name.endswith(".csv"):
        import pandas as pd

        x = pd.read_csv(a, dtype=str, keep_default_na=False)
        y = pd.read_csv(b, dtype=str, keep_default_na=False)
        cols = [c for c in x.columns if c in y.columns and c not in RUN_COLUMNS]
        extra = sorted(set(x.columns) ^ set(y.columns))
        varying = sorted(c for c in x.columns if c in RUN_COLUMNS)
        if x[cols].equals(y[cols]):
            return (f"rows identical (every value, {len(cols)} columns) but for "
                    + "; ".join(filter(None, [
                        extra and "the columns only one side has: " + ", ".join(extra),
                        varying and "columns that vary by run: " + ", ".join(varying)])))
    if a.name.endswith(".json"):
        x, y = json.loads(a.read_text()), json.loads(b.read_text())
        if isinstance(x, dict) and isinstance(y, dict):
            for d in (x, y):
                d.pop("run_ids", None)  # pins made before the script dropped them
            common = set(x) & set(y)
            if all(x[k] == y[k] for k in common):
                only = sorted(set(x) ^ set(y))
                return ("identical for every key both have" +
                        (f"; only one side has: {', '.join(only)}" if only else
                         " (once run_ids, new each run, are left out)"))
    if a.name.endswith(".dtypes.txt"):
        la, lb = set(a.read_text().splitlines()), set(b.read_text().splitlines())
        if la <= lb:
            return "dtypes identical but for added columns: " + ", ".join(
                sorted(line.split()[0] for line in lb - la))
    return f"differs (diff {a} {b})"


def compare(a: Path, b: Path) -> int:
    files = sorted({p.relative_to(a) for p in a.rglob("*") if p.is_file()}
                   | {p.relative_to(b) for p in b.rglob("*") if p.is_file()})
    files = [f for f in files if f.parts[0] != "raw" and f.name != "imported_from.txt"]
    bad = []
    for f in files:
        if not (a / f).exists() or not (b / f).exists():
            bad.append(f"{f}: only in {'B' if not (a / f).exists() else 'A'}")
        elif not filecmp.cmp(a / f, b / f, shallow=False):
            bad.append(f"{f}: " + _difference(a / f, b / f))
    for line in bad:
        print(line)
    print(f"{len(files)} pinned files compared: {len(bad)} differ")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--repo", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--skip-runs", action="store_true",
                    help="no reproduce and packed runs (the quick pins only)")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    args = ap.parse_args()
    if args.compare:
        return compare(Path(args.compare[0]), Path(args.compare[1]))
    if not args.outdir:
        ap.error("give OUTDIR (or --compare A B)")
    repo = Path(args.repo).resolve()
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=False)
    who = run([sys.executable, "-c", "import grokray, grokray.shipped as s, grokray_analysis "
               "as a; print(grokray.__file__); print(s.root()); print(a.__file__)"],
              repo).stdout
    (out / "imported_from.txt").write_text(who)
    print(f"grokray imported from: {who.splitlines()[0]}", flush=True)
    shipped = who.splitlines()[1]
    roots = {str(repo): "<repo>", shipped: "<repo>/sweeps",
             os.path.realpath(shipped): "<repo>/sweeps"}
    steps = [("config hashes", lambda: pin_hashes(repo, out)),
             ("dry runs", lambda: pin_dry_runs(repo, out, roots)),
             ("spec corpus", lambda: pin_corpus(repo, out)),
             ("slurm dry run", lambda: pin_slurm(repo, out, roots))]
    if not args.skip_runs:
        steps += [("reproduce + status", lambda: pin_reproduce(repo, out, roots)),
                  ("packed grid on Ray", lambda: pin_packed(repo, out))]
    for name, step in steps:
        print(f"pinning {name} ...", flush=True)
        step()
    print(f"pins written to {out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
