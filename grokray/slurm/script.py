"""The sbatch script `grokray slurm` writes: `JobOptions` -> a readable bash script.

What the script does, in order (each block is commented in the script itself; docs/cluster.md
explains every line):

1. `#SBATCH` lines: one task per node, the node count, CPUs, GPUs, memory, time, the output file
   beside the sweep (appended to by each requeued run), `--signal=B:USR1@LEAD` (to the batch
   shell only, LEAD seconds before the time limit) and `--requeue`.
2. Environment (the user's to edit: modules, conda, containers): `cd` to the submit dir and
   activate the submitter's own Python environment (its `sys.prefix`).
3. Ray over the allocation: a block of ports derived from the job id, the first of its
   candidate blocks free on every node (probed before Ray starts, so that two jobs on one node,
   or another process holding a port, do not collide), a short node-local temp dir named by the
   job id, the head's address from Slurm's node list resolved to a real interface (never a
   loopback such as 127.0.1.1), a per-job auth token on every side (RAY_AUTH_MODE=token), a
   head on the first node and `srun ... ray start --block` on the others, each given the CPUs
   and the GPUs Slurm granted its task.
4. The driver, `grokray sweep SPEC --address HEAD:PORT`, in the background with `wait`, so that
   the batch shell's traps run at once: USR1 (the time limit coming) and TERM (`scancel --batch
   --signal=TERM`: a graceful stop) are relayed to the driver alone as SIGTERM; it writes every
   finished result and exits 143.
5. Only this job's Ray is stopped (SIGTERM to its own `ray start --block` steps, each stopping
   the processes it started; never a bare `ray stop`), its temp dirs removed; then, when the
   driver said there is more to do and the stop was not the user's, `scontrol requeue`, at most
   `max_requeues` times.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from grokray.slurm import EXIT_MORE_TO_DO, EXIT_NO_PROGRESS
from grokray.slurm.timefmt import format_time

PORT_BLOCK = 200
"""ports per job: a job's ports are BASE .. BASE+199, BASE = 10000 + slot * 200"""
PORT_SLOTS = 250
"""distinct port blocks (10000..59999): jobs whose ids differ by a multiple of it share their
first candidate block"""
PORT_STRIDE = 97
"""a job's k-th candidate block is slot (job id + k * PORT_STRIDE) % PORT_SLOTS (97 and 250
share no factor: the candidates visit every block, and a job's second candidate is not the
next job's first)"""
PORT_TRIES = 8
"""candidate blocks probed; the first free on every node is taken"""


@dataclass
class JobOptions:
    """What `grokray slurm` was asked for, with absolute paths."""

    spec: str
    """the sweep spec (absolute)"""
    sweep: str
    """the sweep's name"""
    out: str
    """the output root passed to `grokray sweep --out` (absolute or a URL)"""
    sweep_dir: str
    """OUT/<sweep> (absolute or a URL)"""
    slurm_dir: str
    """where the script and the job's output file go (a local, shared path)"""
    workdir: str
    """the submit dir: the job `cd`s here"""
    prefix: str
    """the Python environment to activate (the submitter's sys.prefix)"""
    activate: bool = True
    """`prefix` has a bin/activate (a venv); else its bin is put first on PATH (conda)"""
    nodes: int = 1
    gpus_per_node: int = 0
    cpus_per_node: int | None = None
    mem: str | None = None
    time_s: int = 3600
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    sbatch_args: list[str] = field(default_factory=list)
    max_requeues: int = 3
    signal_s: int = 120
    """seconds before the time limit at which Slurm signals the batch shell"""
    pack: str = "off"
    job_name: str = ""

    @property
    def script_path(self) -> str:
        return f"{self.slurm_dir}/{self.sweep}.sbatch"

    @property
    def output_path(self) -> str:
        """The job's stdout and stderr (%j: the job id); each requeued run appends."""
        return f"{self.slurm_dir}/{self.sweep}-%j.out"


def _q(s: str) -> str:
    return shlex.quote(str(s))


def sbatch_lines(o: JobOptions) -> list[str]:
    """The `#SBATCH` lines."""
    lines = [
        f"#SBATCH --job-name={o.job_name or 'grokray-' + o.sweep}",
        f"#SBATCH --nodes={o.nodes}",
        "#SBATCH --ntasks-per-node=1",
    ]
    if o.cpus_per_node:
        lines.append(f"#SBATCH --cpus-per-task={o.cpus_per_node}")
    if o.gpus_per_node:
        lines.append(f"#SBATCH --gres=gpu:{o.gpus_per_node}")
    if o.mem:
        lines.append(f"#SBATCH --mem={o.mem}")
    lines.append(f"#SBATCH --time={format_time(o.time_s)}")
    for flag, v in (("partition", o.partition), ("account", o.account), ("qos", o.qos)):
        if v:
            lines.append(f"#SBATCH --{flag}={v}")
    lines += [
        f"#SBATCH --output={o.output_path}",
        "#SBATCH --open-mode=append",
        f"#SBATCH --signal=B:USR1@{o.signal_s}",
        "#SBATCH --requeue",
    ]
    lines += [f"#SBATCH {a}" for a in o.sbatch_args]
    return lines


def environment_lines(o: JobOptions) -> list[str]:
    """The environment block: cd, activate (the user's to edit)."""
    act = (f"source {_q(o.prefix + '/bin/activate')}" if o.activate
           else f"export PATH={_q(o.prefix + '/bin')}:\"$PATH\"")
    return [
        "# ---- environment: edit these lines for your site (module load ..., conda activate",
        "# ---- ENV, or run the commands below inside a container; see docs/cluster.md)",
        f"cd {_q(o.workdir)}",
        act,
        "",
    ]


def driver_command(o: JobOptions) -> str:
    """`grokray sweep SPEC --out OUT --address ... --plain` as the script runs it."""
    cmd = ["grokray", "sweep", _q(o.spec), "--out", _q(o.out)]
    if o.pack and o.pack != "off":
        cmd += ["--pack", _q(o.pack)]
    return " ".join(cmd) + ' --address "$HEAD_IP:$RAY_PORT" --plain'


def render(o: JobOptions) -> str:
    """The whole sbatch script."""
    head = [
        "#!/bin/bash",
        f"# grokray slurm: sweep {o.sweep} ({o.spec}) on Ray over a Slurm allocation.",
        "# Written by `grokray slurm`; edit it and submit it again with:",
        f"#   sbatch {_q(o.script_path)}",
        "# Follow it:",
        "#   squeue -j JOBID",
        f"#   grokray status {_q(o.sweep_dir)}",
        f"#   grokray dashboard {_q(o.out)}",
        *sbatch_lines(o),
        "set -uo pipefail",
        "",
        *environment_lines(o),
        "",
    ]
    body = _BODY
    for key, value in {
        "@MAX_REQUEUES@": str(o.max_requeues),
        "@SIGNAL_S@": str(o.signal_s),
        "@PORT_SLOTS@": str(PORT_SLOTS),
        "@PORT_BLOCK@": str(PORT_BLOCK),
        "@PORT_STRIDE@": str(PORT_STRIDE),
        "@PORT_TRIES_1@": str(PORT_TRIES - 1),
        "@DRIVER@": driver_command(o),
        "@EXIT_MORE@": str(EXIT_MORE_TO_DO),
        "@EXIT_NO_PROGRESS@": str(EXIT_NO_PROGRESS),
    }.items():
        body = body.replace(key, value)
    return "\n".join(head) + body


_BODY = r"""# ---- Ray over this allocation ----
# Ports and temp dir come from the job id, so that two jobs on one node do not collide. The
# temp dir is node-local and short: Ray's Unix socket paths under it must stay under 107 bytes
# (/tmp/gr-JOB-NODE; shorten it if your node names are long).
JOB="$SLURM_JOB_ID"
RUN="${SLURM_RESTART_COUNT:-0}"            # 0, then 1, 2, ... after each requeue
# this job's ports: a block BASE .. BASE+@PORT_BLOCK@-1 in 10000..59999. Its candidate blocks
# come from the job id (jobs whose ids differ by a multiple of @PORT_SLOTS@ share the first);
# the first one free on every node is taken (port_probe, below)
port_base() { echo $(( 10000 + ((JOB + $1 * @PORT_STRIDE@) % @PORT_SLOTS@) * @PORT_BLOCK@ )); }
CANDIDATES="$(for k in $(seq 0 @PORT_TRIES_1@); do port_base "$k"; done | tr '\n' ' ')"
BASE=$(port_base 0)
export RAY_TMP="/tmp/gr-$JOB"
ray_ports() {
    RAY_PORT=$BASE
    RAY_PORTS="--node-manager-port=$((BASE + 1)) --object-manager-port=$((BASE + 2))
  --ray-client-server-port=$((BASE + 3)) --dashboard-agent-grpc-port=$((BASE + 4))
  --dashboard-agent-listen-port=$((BASE + 5)) --metrics-export-port=$((BASE + 6))
  --runtime-env-agent-port=$((BASE + 7)) --min-worker-port=$((BASE + 20))
  --max-worker-port=$((BASE + @PORT_BLOCK@ - 1))"
    export RAY_PORT RAY_PORTS
}
ray_ports
# token auth on every side: the head, the workers and the driver read these
export RAY_AUTH_MODE=token
export RAY_AUTH_TOKEN="$(python -c 'import secrets; print(secrets.token_hex(32))')"
# workers give up 10 s after the head is gone (Ray's default: 60 s)
export RAY_gcs_rpc_server_reconnect_timeout_s=10
# the driver reads the time-limit signal's lead to know when it must be done
export GROKRAY_SLURM_SIGNAL_S=@SIGNAL_S@

# The head runs on the first node of the allocation (where this script runs). Its address comes
# from Slurm's node list; a name that resolves to a loopback address (Debian's 127.0.1.1) is
# replaced by this node's first real interface.
NODES=($(scontrol show hostnames "$SLURM_JOB_NODELIST"))
HEAD="${NODES[0]}"
HEAD_IP="$(getent ahostsv4 "$HEAD" | awk 'NR == 1 { print $1 }')"
case "$HEAD_IP" in
    "" | 127.*) HEAD_IP="$(hostname -I | awk '{ print $1 }')" ;;
esac
export HEAD_IP

# Which candidate blocks are free, on each node (one line each): a block is free where its
# fixed ports (BASE .. BASE+7) can be bound, with SO_REUSEADDR as Ray binds them (a port this
# job's previous run left in TIME_WAIT is free); another job's Ray, or any process listening on
# or connected from one of them, holds it.
port_probe() {
    python -c 'import socket, sys
def free(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.bind(("", port))
        return True
    except OSError:
        return False
    finally:
        s.close()
print(" ".join(b for b in sys.argv[1:] if all(free(int(b) + i) for i in range(8))))' "$@"
}
export -f port_probe
FREE="$(srun --nodes="${#NODES[@]}" --ntasks="${#NODES[@]}" --ntasks-per-node=1 --overlap \
    bash -c "port_probe $CANDIDATES" 2>/dev/null)"
PICKED=""
for b in $CANDIDATES; do
    if [ "$(grep -cw "$b" <<< "$FREE")" -ge "${#NODES[@]}" ]; then PICKED=$b; break; fi
done
if [ -z "$PICKED" ]; then
    echo "grokray slurm: job $JOB: none of the port blocks $CANDIDATES is free on every node;" \
         "trying $BASE.."
elif [ "$PICKED" != "$BASE" ]; then
    echo "grokray slurm: job $JOB: ports $BASE.. are taken on a node; this job's Ray uses" \
         "$PICKED.."
    BASE=$PICKED
fi
ray_ports

# One Ray node, inside its srun task: the CPUs and GPUs Slurm granted this task (Slurm sets
# CUDA_VISIBLE_DEVICES to the GPUs of the allocation; Ray hands them out to trials), its own
# temp dir (the node's name in it too, in case /tmp is shared), this job's ports. Its pid goes
# beside the temp dir, for stop_ray.
ray_node() {
    local role="$1" cpus="${SLURM_CPUS_PER_TASK:-${SLURM_CPUS_ON_NODE:-1}}" gpus=0
    RAY_TMP="$RAY_TMP-${SLURMD_NODENAME:-node}"
    if [ -n "${CUDA_VISIBLE_DEVICES:-}" ]; then
        gpus=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
    fi
    rm -rf "$RAY_TMP" "$RAY_TMP.stop"
    if [ "$role" = head ]; then   # head-only flags on a worker make its `ray start` fail
        set -- --head --node-ip-address="$HEAD_IP" --port="$RAY_PORT" --include-dashboard=false
    else
        set -- --address="$HEAD_IP:$RAY_PORT"
    fi
    # Ray gives its raylet 30 s to register, which a loaded node can miss: a start that fails
    # within its first two minutes is tried again (three tries)
    local try t0 rc
    for try in 1 2 3; do
        t0=$SECONDS
        ray start --block "$@" $RAY_PORTS --temp-dir="$RAY_TMP" --num-cpus="$cpus" \
            --num-gpus="$gpus" --disable-usage-stats &
        echo $! > "$RAY_TMP.pid"
        wait $!; rc=$?
        rm -rf "$RAY_TMP"
        [ -e "$RAY_TMP.stop" ] && break   # stop_ray's
        { [ "$rc" = 1 ] && [ $((SECONDS - t0)) -lt 120 ]; } || break
        echo "grokray slurm: ray start failed on $(hostname) (try $try of 3)" >&2
    done
    rm -f "$RAY_TMP.pid" "$RAY_TMP.stop"
}
export -f ray_node

# --overlap: the Ray steps and the driver (in this script) share the allocation's CPUs
srun --nodes=1 --ntasks=1 --overlap -w "$HEAD" bash -c 'ray_node head' &
RAY_STEPS=($!)
# This job's Ray only, never a bare `ray stop` (it stops every Ray on a shared node): SIGTERM to
# each node's own `ray start --block`, which stops the processes it started; then its temp dir
# goes. A step still running a minute later is ended by srun.
stop_ray() {
    srun --nodes="${#NODES[@]}" --ntasks="${#NODES[@]}" --ntasks-per-node=1 --overlap \
        bash -c 'mine="$RAY_TMP-$SLURMD_NODENAME"; touch "$mine.stop"
                 kill -TERM "$(cat "$mine.pid" 2>/dev/null)" 2>/dev/null' 2>/dev/null
    for _ in $(seq 60); do
        kill -0 "${RAY_STEPS[@]}" 2>/dev/null || break
        sleep 1
    done
    kill -TERM "${RAY_STEPS[@]}" 2>/dev/null
    wait "${RAY_STEPS[@]}" 2>/dev/null
}

# Wait until the head's GCS port answers (bash's /dev/tcp: polling with `ray status`, a Python
# process a second, starved a loaded node's starting head), then until every node has joined.
gcs_up() { (exec 3<>"/dev/tcp/$HEAD_IP/$RAY_PORT") 2>/dev/null; }
for _ in $(seq 300); do
    gcs_up && break
    sleep 1
done
if ! gcs_up; then
    echo "grokray slurm: job $JOB: the Ray head did not start in 5 minutes (its output above)"
    stop_ray
    exit 1
fi
if [ "${#NODES[@]}" -gt 1 ]; then
    srun --nodes=$(( ${#NODES[@]} - 1 )) --ntasks=$(( ${#NODES[@]} - 1 )) --ntasks-per-node=1 \
        --overlap --exclude="$HEAD" bash -c 'ray_node worker' &
    RAY_STEPS+=($!)
fi
for _ in $(seq 60); do
    alive=$(ray status --address="$HEAD_IP:$RAY_PORT" 2>/dev/null | grep -c ' node_')
    [ "${alive:-0}" -ge "${#NODES[@]}" ] && break
    sleep 5
done
echo "grokray slurm: job $JOB run $RUN, Ray head $HEAD_IP:$RAY_PORT," \
     "${alive:-0} of ${#NODES[@]} nodes"

# ---- the sweep ----
# In the background with `wait`: bash runs a trap only when the command it waits on returns,
# and `wait` returns at once on a signal. USR1 (Slurm, @SIGNAL_S@ s before the time limit) and
# TERM (`scancel --batch --signal=TERM`) reach this shell only; each is relayed to the driver
# alone, which writes every finished result and exits 143.
STOPPED_BY=""
trap 'STOPPED_BY=limit; kill -TERM "$DRIVER" 2>/dev/null' USR1
trap 'STOPPED_BY=user; kill -TERM "$DRIVER" 2>/dev/null' TERM
@DRIVER@ &
DRIVER=$!
wait "$DRIVER"; rc=$?
while kill -0 "$DRIVER" 2>/dev/null; do wait "$DRIVER"; rc=$?; done
stop_ray

# ---- requeue ----
# 143: stopped by the time limit's signal; @EXIT_MORE@: no trial left could finish before the
# limit. Either way the driver made progress (else it exits @EXIT_NO_PROGRESS@: a requeue would
# do the same). The next run of this job resumes the sweep (on any node: the sweep's lock knows
# it is the same job).
if { [ "$rc" = 143 ] && [ "$STOPPED_BY" = limit ]; } || [ "$rc" = @EXIT_MORE@ ]; then
    if [ "$RUN" -lt @MAX_REQUEUES@ ]; then
        echo "grokray slurm: job $JOB run $RUN stopped (exit $rc); requeued" \
             "(run $((RUN + 1)) of at most $((@MAX_REQUEUES@ + 1)))"
        scontrol requeue "$JOB"
        exit 0
    fi
    echo "grokray slurm: job $JOB stopped after $((RUN + 1)) runs (--max-requeues" \
         "@MAX_REQUEUES@); submit the script again to go on"
fi
exit "$rc"
"""
