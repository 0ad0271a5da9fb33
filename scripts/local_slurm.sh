#!/usr/bin/env bash
# A real Slurm on this one machine, for `grokray slurm` and its tests: munge, slurmctld and one
# or two slurmd, started by hand (no systemd, no Docker), and torn down again.
#
#   scripts/local_slurm.sh install         # apt-get: munge slurmctld slurmd slurm-client (root)
#   scripts/local_slurm.sh up [--nodes 1|2] [--gpus G] [--cpus C]
#                                          # start munged, slurmctld, slurmd (each in its own
#                                          #   PID namespace); prints the SLURM_CONF to export
#   scripts/local_slurm.sh down            # stop them all (every job's processes end with them)
#   scripts/local_slurm.sh env             # `export SLURM_CONF=...` for the running Slurm
#   scripts/local_slurm.sh check           # exit 0 when sinfo answers and the nodes are idle
#
# One node (default): slurmd `gr1` at 127.0.0.1. Two nodes (--nodes 2): one slurmd per network
# namespace (`gr1` at 10.77.0.11, `gr2` at 10.77.0.12) on a bridge `grbr0` (10.77.0.1, where
# slurmctld listens): a job's head runs on one "node", its worker on the other, and Ray talks
# between them over the bridge.
#
# Why a PID namespace per slurmd: whatever a job runs sees only the processes of its own node's
# jobs, never an embedded Ray or a Ray cluster of another user of this machine.
#
# --gpus G: fake GPUs. G character devices made with mknod (major 195, as NVIDIA's) are named in
# gres.conf, so `--gres=gpu:N` / `--gpus-per-node N` schedules them and Slurm sets
# CUDA_VISIBLE_DEVICES in the job; there is no GPU behind them (trials run on the CPU).
#
# --cpus C: CPUs each node declares (default 4, whatever the machine has: Slurm is told to trust
# the config, so that two small jobs fit on one node of a 2-core machine).
#
# Environment: GROKRAY_SLURM_STATE (default /tmp/grokray-slurm: config, keys, logs, spool, state),
# GROKRAY_SLURM_PORT (slurmctld's port, default 6817; slurmd takes the next one).
set -euo pipefail

STATE="${GROKRAY_SLURM_STATE:-/tmp/grokray-slurm}"
PORT="${GROKRAY_SLURM_PORT:-6817}"
CONF="$STATE/slurm.conf"
BRIDGE=grbr0
NET=10.77.0

die() { echo "local_slurm: $*" >&2; exit 2; }

install() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null &&
       command -v sbatch >/dev/null && command -v munged >/dev/null; then
        echo "installed: $(slurmctld -V), munge $(munged -V 2>&1 | head -1)"; return 0
    fi
    [ "$(id -u)" = 0 ] || die "needs root to install munge and Slurm (apt-get)"
    command -v apt-get >/dev/null || die "no apt-get: install munge and Slurm by hand"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq munge slurmctld slurmd slurm-client >/dev/null 2>&1 || {
        apt-get update -qq && apt-get install -y -qq munge slurmctld slurmd slurm-client >/dev/null; }
    echo "installed: $(slurmctld -V)"
}

write_conf() {  # $1 nodes, $2 gpus, $3 cpus
    local nodes="$1" gpus="$2" cpus="$3" ctl gres="" i
    if [ "$nodes" = 1 ]; then ctl=127.0.0.1; else ctl="$NET.1"; fi
    [ "$gpus" -gt 0 ] && gres="Gres=gpu:$gpus"
    {
        echo "# written by scripts/local_slurm.sh up --nodes $nodes --gpus $gpus --cpus $cpus"
        echo "ClusterName=grokray"
        echo "SlurmctldHost=$(hostname -s)($ctl)"
        echo "SlurmctldPort=$PORT"
        echo "SlurmdPort=$((PORT + 1))"
        echo "SlurmUser=root"
        echo "SlurmdUser=root"
        echo "AuthType=auth/munge"
        echo "CredType=cred/munge"
        # a requeued job may start again after cred_expire s (Slurm: 120 s); 10 s keeps tests short
        echo "AuthInfo=socket=$STATE/munge.socket,cred_expire=10"
        echo "StateSaveLocation=$STATE/ctld"
        echo "SlurmdSpoolDir=$STATE/spool-%n"
        echo "SlurmctldPidFile=$STATE/slurmctld.pid"
        echo "SlurmdPidFile=$STATE/slurmd-%n.pid"
        echo "SlurmctldLogFile=$STATE/slurmctld.log"
        echo "SlurmdLogFile=$STATE/slurmd-%n.log"
        echo "ProctrackType=proctrack/linuxproc"
        echo "TaskPlugin=task/none"
        echo "SwitchType=switch/none"
        echo "MpiDefault=none"
        echo "SchedulerType=sched/backfill"
        echo "SelectType=select/cons_tres"
        echo "SelectTypeParameters=CR_Core"
        echo "SlurmdParameters=config_overrides"
        echo "ReturnToService=2"
        echo "JobAcctGatherType=jobacct_gather/none"
        echo "AccountingStorageType=accounting_storage/none"
        echo "JobCompType=jobcomp/filetxt"
        echo "JobCompLoc=$STATE/jobcomp.txt"
        echo "MinJobAge=600"
        echo "KillWait=10"
        echo "SchedulerParameters=sched_interval=5"
        echo "GresTypes=gpu"
        for i in $(seq "$nodes"); do
            local addr=127.0.0.1
            [ "$nodes" = 1 ] || addr="$NET.$((10 + i))"
            echo "NodeName=gr$i NodeAddr=$addr CPUs=$cpus RealMemory=8000 $gres State=UNKNOWN"
        done
        echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP"
    } > "$CONF"
    : > "$STATE/gres.conf"
    if [ "$gpus" -gt 0 ]; then
        mkdir -p "$STATE/dev"
        for i in $(seq 0 $((gpus - 1))); do
            [ -c "$STATE/dev/nvidia$i" ] || mknod "$STATE/dev/nvidia$i" c 195 "$i"
        done
        echo "AutoDetect=off" > "$STATE/gres.conf"
        echo "Name=gpu File=$STATE/dev/nvidia[0-$((gpus - 1))]" >> "$STATE/gres.conf"
    fi
    echo "$nodes" > "$STATE/nodes"
}

start_munge() {
    [ -f "$STATE/munge.key" ] || {
        dd if=/dev/urandom of="$STATE/munge.key" bs=1024 count=1 status=none
        chmod 400 "$STATE/munge.key"; }
    munged --force --key-file="$STATE/munge.key" --socket="$STATE/munge.socket" \
        --pid-file="$STATE/munged.pid" --log-file="$STATE/munged.log" \
        --seed-file="$STATE/munged.seed"
}

net_up() {  # a bridge and one network namespace per node
    local nodes="$1" i
    ip link show "$BRIDGE" >/dev/null 2>&1 || {
        ip link add "$BRIDGE" type bridge
        ip addr add "$NET.1/24" dev "$BRIDGE"
        ip link set "$BRIDGE" up; }
    for i in $(seq "$nodes"); do
        ip netns list | grep -qw "gr$i" && continue
        ip netns add "gr$i"
        ip link add "grv$i" type veth peer name eth0 netns "gr$i"
        ip link set "grv$i" master "$BRIDGE" up
        ip -n "gr$i" addr add "$NET.$((10 + i))/24" dev eth0
        ip -n "gr$i" link set eth0 up
        ip -n "gr$i" link set lo up
        ip -n "gr$i" route add default via "$NET.1"
    done
}

net_down() {
    local i
    for i in 1 2; do
        ip netns list 2>/dev/null | grep -qw "gr$i" && ip netns del "gr$i"
        ip link del "grv$i" 2>/dev/null || true
    done
    ip link del "$BRIDGE" 2>/dev/null || true
}

start_slurmd() {  # $1 node name, $2 nodes
    local name="$1" nodes="$2" prefix=()
    # nsenter, not `ip netns exec`: that remounts /sys, without the cgroup fs slurmd wants
    [ "$nodes" = 1 ] || prefix=(nsenter "--net=/var/run/netns/$name")
    mkdir -p "$STATE/spool-$name"
    # --kill-child: when unshare dies, bash (pid 1 of the namespace, which reaps the orphans
    # that job steps leave) and with it slurmd and every job process of this node go too.
    # --uts: the node's own host name (a trial's row names the node it ran on).
    setsid "${prefix[@]}" unshare --pid --fork --mount-proc --uts --kill-child \
        bash -c 'hostname "$1" && slurmd -D -N "$1" -f "$2" & wait' bash "$name" "$CONF" \
        >"$STATE/slurmd-$name.out" 2>&1 </dev/null &
    echo $! > "$STATE/unshare-$name.pid"
}

up() {
    local nodes=1 gpus=0 cpus=4
    while [ $# -gt 0 ]; do
        case "$1" in
            --nodes) nodes="$2"; shift 2 ;;
            --gpus) gpus="$2"; shift 2 ;;
            --cpus) cpus="$2"; shift 2 ;;
            *) die "up: unknown option $1 (valid: --nodes 1|2, --gpus G, --cpus C)" ;;
        esac
    done
    case "$nodes" in 1|2) ;; *) die "--nodes: 1 or 2, not $nodes" ;; esac
    command -v slurmctld >/dev/null || die "no slurmctld: run '$0 install'"
    [ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as their users; namespaces)"
    if [ -f "$STATE/slurmctld.pid" ] && kill -0 "$(cat "$STATE/slurmctld.pid")" 2>/dev/null; then
        die "already up (SLURM_CONF=$CONF); '$0 down' first"
    fi
    mkdir -p "$STATE/ctld"
    chmod 755 "$STATE"
    write_conf "$nodes" "$gpus" "$cpus"
    start_munge
    [ "$nodes" = 1 ] || net_up "$nodes"
    export SLURM_CONF="$CONF"
    slurmctld -i -f "$CONF" >"$STATE/slurmctld.out" 2>&1 </dev/null || {
        tail -n 5 "$STATE/slurmctld.log" >&2; down; die "slurmctld did not start (log above)"; }
    local i
    for i in $(seq "$nodes"); do start_slurmd "gr$i" "$nodes"; done
    for _ in $(seq 60); do
        if check >/dev/null 2>&1; then
            echo "Slurm up: $nodes node(s), $cpus CPUs and $gpus fake GPU(s) each"
            echo "export SLURM_CONF=$CONF"
            return 0
        fi
        sleep 1
    done
    tail -5 "$STATE"/slurmctld.log "$STATE"/slurmd-*.log >&2 || true
    down
    die "the nodes did not come up (logs above)"
}

down() {
    local f pid
    if [ -f "$STATE/slurmctld.pid" ]; then
        pid="$(cat "$STATE/slurmctld.pid")"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        rm -f "$STATE/slurmctld.pid"
    fi
    for f in "$STATE"/unshare-*.pid; do
        [ -f "$f" ] || continue
        pid="$(cat "$f")"
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$f"
    done
    if [ -f "$STATE/munged.pid" ]; then
        kill "$(cat "$STATE/munged.pid")" 2>/dev/null || true
        rm -f "$STATE/munged.pid"
    fi
    net_down
    # the controller's state goes too: the next `up` starts with no jobs and job ids from 1
    rm -rf "$STATE/ctld" "$STATE"/spool-*
    echo "Slurm down"
}

check() {
    [ -f "$CONF" ] || die "not set up: '$0 up'"
    local n want
    want="$(cat "$STATE/nodes")"
    n="$(SLURM_CONF="$CONF" sinfo -h -N -o '%N %t' 2>/dev/null | grep -cE ' (idle|mix|alloc)$' || true)"
    [ "$n" -ge "$want" ] || die "$n of $want nodes up"
    echo "$n node(s) up"
}

case "${1:-}" in
    install) install ;;
    up) shift; up "$@" ;;
    down) down ;;
    env) echo "export SLURM_CONF=$CONF" ;;
    check) check ;;
    *) die "usage: $0 install | up [--nodes 1|2] [--gpus G] [--cpus C] | down | env | check" ;;
esac
