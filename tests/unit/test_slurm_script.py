"""The sbatch script `grokray slurm` writes, run by bash against stand-ins for srun, scontrol,
ray and the driver (no Slurm needed): the head address, ports and auth the driver is given, the
signal relay (USR1 from the time limit, TERM from `scancel --batch`), the requeue decision, and
that only the job's own Ray is stopped."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from grokray.slurm import EXIT_MORE_TO_DO, EXIT_NO_PROGRESS
from grokray.slurm.script import JobOptions, render

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")

STUBS = {
    # srun: the Ray steps sleep until signalled (their pid recorded); the stop step signals them
    "srun": """#!/bin/bash
echo "srun $*" >> "$STUB_LOG"
if [[ "$*" == *"ray_node head"* || "$*" == *"ray_node worker"* ]]; then
    trap 'echo "ray step $$ stopped" >> "$STUB_LOG"; kill $(jobs -p) 2>/dev/null; exit 0' TERM
    echo $$ >> "$STUB_DIR/steps"
    if [[ "$*" == *"ray_node head"* ]]; then   # the head's GCS port
        python -c "import socket, time; s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, \
socket.SO_REUSEADDR, 1); s.bind(('$HEAD_IP', $RAY_PORT)); s.listen(); time.sleep(120)" \
            >/dev/null 2>&1 &
        echo $! >> "$STUB_DIR/listener"
    fi
    while :; do sleep 0.1; done
fi
if [[ "$*" == *"port_probe"* ]]; then   # each node answers with the blocks free on it
    for n in $(seq "$STUB_NODES"); do bash -c "${@: -1}"; done
    exit 0
fi
if [[ "$*" == *"kill -TERM"* ]]; then
    for p in $(cat "$STUB_DIR/steps"); do kill -TERM "$p" 2>/dev/null; done
fi
""",
    "scontrol": """#!/bin/bash
echo "scontrol $*" >> "$STUB_LOG"
if [ "$1 $2" = "show hostnames" ]; then tr ',' '\\n' <<< "$3"; fi
""",
    "ray": """#!/bin/bash
if [ "$1" = status ]; then for n in $(seq "$STUB_NODES"); do echo " 1 node_$n"; done; fi
""",
    "getent": """#!/bin/bash
echo "127.0.1.1       STREAM $2"
""",
    "hostname": """#!/bin/bash
echo "127.0.0.3 172.17.0.1"
""",
    # the driver: records its arguments and environment, then waits for SIGTERM (exit 143) or
    # exits with $STUB_RC
    "grokray": """#!/bin/bash
echo "$*" > "$STUB_DIR/driver_args"
env > "$STUB_DIR/driver_env"
if [ -n "${STUB_RC:-}" ]; then exit "$STUB_RC"; fi
trap 'echo "driver got TERM" >> "$STUB_LOG"; exit 143' TERM
touch "$STUB_DIR/driver_ready"
while :; do sleep 0.1; done
""",
}


def _opts(tmp: Path, **kw) -> JobOptions:
    prefix = tmp / "env"
    (prefix / "bin").mkdir(parents=True, exist_ok=True)
    (prefix / "bin" / "activate").write_text("export ACTIVATED=yes\n")
    base = dict(spec=str(tmp / "s.yaml"), sweep="s", out=str(tmp / "out"),
                sweep_dir=str(tmp / "out" / "s"), slurm_dir=str(tmp / "out" / "s" / "slurm"),
                workdir=str(tmp), prefix=str(prefix), nodes=2, time_s=600, max_requeues=2)
    base.update(kw)
    return JobOptions(**base)


def _start(tmp: Path, opts: JobOptions, job: int = 4321, restart: int = 0, rc=None):
    stubs = tmp / "stubs"
    stubs.mkdir(exist_ok=True)
    for name, text in STUBS.items():
        (stubs / name).write_text(text)
        (stubs / name).chmod(0o755)
    script = tmp / "job.sbatch"
    script.write_text(render(opts))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RAY_"))}
    env.update(PATH=f"{stubs}:{env['PATH']}", STUB_LOG=str(tmp / "log"), STUB_DIR=str(tmp),
               STUB_NODES=str(opts.nodes), SLURM_JOB_ID=str(job),
               SLURM_JOB_NODELIST="n1,n2"[: 2 + 3 * (opts.nodes - 1)],
               SLURM_RESTART_COUNT=str(restart), SLURM_CPUS_PER_TASK="4")
    if rc is not None:
        env["STUB_RC"] = str(rc)
    (tmp / "log").write_text("")
    return subprocess.Popen(["bash", str(script)], env=env, cwd=tmp,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _wait_for(path: Path, timeout: float = 30.0) -> None:
    t0 = time.monotonic()
    while not path.exists():
        assert time.monotonic() - t0 < timeout, f"{path} never appeared"
        time.sleep(0.05)


def _stop_listeners(tmp: Path) -> None:
    f = tmp / "listener"
    for pid in f.read_text().split() if f.exists() else []:
        try:
            os.kill(int(pid), signal.SIGTERM)
        except (ProcessLookupError, ValueError):
            pass


@contextlib.contextmanager
def _job(tmp: Path, opts: JobOptions, **kw):
    """The script running under bash (`_start`); on leaving, the stand-ins' listeners are
    stopped and a script still running is killed."""
    p = _start(tmp, opts, **kw)
    try:
        yield p
    finally:
        _stop_listeners(tmp)
        if p.poll() is None:
            p.kill()


def _log(tmp: Path) -> str:
    return (tmp / "log").read_text()


def test_script_is_valid_bash(tmp_path):
    p = tmp_path / "x.sbatch"
    p.write_text(render(_opts(tmp_path, gpus_per_node=2, cpus_per_node=8, mem="16G",
                              partition="gpu", account="lab", qos="low",
                              sbatch_args=["--constraint=a100"])))
    r = subprocess.run(["bash", "-n", str(p)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    text = p.read_text()
    for line in ("#SBATCH --nodes=2", "#SBATCH --ntasks-per-node=1", "#SBATCH --cpus-per-task=8",
                 "#SBATCH --gres=gpu:2", "#SBATCH --mem=16G", "#SBATCH --time=00:10:00",
                 "#SBATCH --partition=gpu", "#SBATCH --account=lab", "#SBATCH --qos=low",
                 "#SBATCH --constraint=a100", "#SBATCH --signal=B:USR1@120", "#SBATCH --requeue",
                 f"#SBATCH --output={tmp_path}/out/s/slurm/s-%j.out",
                 f"cd {tmp_path}", f"source {tmp_path}/env/bin/activate"):
        assert line in text.splitlines(), line
    # every #SBATCH line comes before the first command (sbatch stops reading at it)
    lines = text.splitlines()
    first_cmd = next(i for i, ln in enumerate(lines) if ln and not ln.startswith("#"))
    assert all(i < first_cmd for i, ln in enumerate(lines) if ln.startswith("#SBATCH"))
    assert "ray stop" not in text.replace("never a bare `ray stop`", "")


def test_conda_prefix_goes_on_path(tmp_path):
    text = render(_opts(tmp_path, activate=False))
    assert f"export PATH={tmp_path}/env/bin:\"$PATH\"" in text
    assert "bin/activate" not in text


def test_driver_gets_head_address_ports_and_token(tmp_path):
    with _job(tmp_path, _opts(tmp_path), job=4321) as p:
        _wait_for(tmp_path / "driver_ready")
        args = (tmp_path / "driver_args").read_text().split()
        env = dict(ln.split("=", 1) for ln in (tmp_path / "driver_env").read_text().splitlines()
                   if "=" in ln)
        port = 10000 + (4321 % 250) * 200
        # 127.0.1.1, which the node name resolved to, is replaced by the first address of
        # `hostname -I` (a stand-in's: a loopback address the test can listen on)
        assert args[:5] == ["sweep", str(tmp_path / "s.yaml"), "--out", str(tmp_path / "out"),
                            "--address"]
        assert args[5] == f"127.0.0.3:{port}" and "--plain" in args
        assert env["RAY_AUTH_MODE"] == "token" and len(env["RAY_AUTH_TOKEN"]) == 64
        assert env["GROKRAY_SLURM_SIGNAL_S"] == "120" and env["ACTIVATED"] == "yes"
        log = _log(tmp_path)
        assert "srun --nodes=1 --ntasks=1 --overlap -w n1 bash -c ray_node head" in log
        assert "--exclude=n1 bash -c ray_node worker" in log
        p.send_signal(signal.SIGUSR1)  # Slurm's signal before the time limit
        out, _ = p.communicate(timeout=60)
    log = _log(tmp_path)
    assert "driver got TERM" in log
    assert log.count("stopped") == 2  # both Ray steps, each stopped by its own pid
    assert "scontrol requeue 4321" in log, out
    assert p.returncode == 0 and "requeued (run 1 of at most 3)" in out


def test_user_stop_is_not_requeued(tmp_path):
    with _job(tmp_path, _opts(tmp_path, nodes=1)) as p:
        _wait_for(tmp_path / "driver_ready")
        p.send_signal(signal.SIGTERM)  # scancel --batch --signal=TERM
        out, _ = p.communicate(timeout=60)
    log = _log(tmp_path)
    assert "driver got TERM" in log and "requeue" not in log
    assert "ray_node worker" not in log  # one node: no worker step
    assert p.returncode == 143, out


@pytest.mark.parametrize("rc, restart, requeued", [
    (EXIT_MORE_TO_DO, 0, True),     # no trial left fits before the limit: next allocation
    (EXIT_MORE_TO_DO, 2, False),    # --max-requeues 2 reached
    (EXIT_NO_PROGRESS, 0, False),   # nothing new in this allocation: a requeue would loop
    (0, 0, False),                  # done
])
def test_requeue_decision(tmp_path, rc, restart, requeued):
    with _job(tmp_path, _opts(tmp_path, nodes=1), restart=restart, rc=rc) as p:
        out, _ = p.communicate(timeout=60)
    assert ("scontrol requeue" in _log(tmp_path)) is requeued, out
    assert p.returncode == (0 if requeued else rc)
    if rc == EXIT_MORE_TO_DO and not requeued:
        assert "stopped after 3 runs (--max-requeues 2)" in out


def test_two_jobs_get_distinct_ports_and_temp_dirs(tmp_path):
    text = render(_opts(tmp_path))
    block = text[text.index('JOB="$SLURM_JOB_ID"'):text.index("# token auth")]
    seen = set()
    for job in (1, 2, 249, 250 + 7):
        r = subprocess.run(["bash", "-c", block + 'echo "$RAY_PORT $RAY_TMP $RAY_PORTS"'],
                           env={"SLURM_JOB_ID": str(job), "PATH": os.environ["PATH"]},
                           capture_output=True, text=True, check=True)
        port, tmp, *ports = r.stdout.split()
        nums = [int(port)] + [int(x.split("=")[1]) for x in ports]
        assert all(10000 <= n < 60000 for n in nums)
        assert len(tmp) <= 20  # Ray's socket paths under it stay short
        seen.add((port, tmp))
    assert len(seen) == 4


def test_a_taken_port_block_moves_the_job_to_its_next_candidate(tmp_path):
    """A process holding one of the job's first-candidate ports (another job whose id differs
    by a multiple of 250, or anything else) moves its Ray to the next candidate block, which
    comes from the job id too; the driver is given that block's head port."""
    import socket as so

    from grokray.slurm.script import PORT_BLOCK, PORT_SLOTS, PORT_STRIDE

    job = 4321
    first = 10000 + (job % PORT_SLOTS) * PORT_BLOCK
    second = 10000 + ((job + PORT_STRIDE) % PORT_SLOTS) * PORT_BLOCK
    held = so.socket()
    held.bind(("", first + 5))  # the dashboard agent's port of the first block
    held.listen()
    try:
        with _job(tmp_path, _opts(tmp_path, nodes=2), job=job) as p:
            _wait_for(tmp_path / "driver_ready")
            args = (tmp_path / "driver_args").read_text().split()
            p.send_signal(signal.SIGTERM)
            out, _ = p.communicate(timeout=60)
    finally:
        held.close()
    assert args[5] == f"127.0.0.3:{second}", args
    assert f"ports {first}.. are taken on a node; this job's Ray uses {second}.." in out
    # with the port free again, the same job takes its first block
    again = tmp_path / "again"
    again.mkdir()
    with _job(again, _opts(again, nodes=2), job=job) as p:
        _wait_for(again / "driver_ready")
        args = (again / "driver_args").read_text().split()
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
    assert args[5] == f"127.0.0.3:{first}", args
