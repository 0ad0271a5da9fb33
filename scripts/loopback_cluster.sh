#!/usr/bin/env bash
# Prepares one machine to run grokray's on-premises cluster config (cluster.onprem.yaml) against
# itself: a Ray head at 127.0.0.1 and a worker at 127.0.0.2, both reached by `ray up` over SSH.
# The slow test tests/integration/test_cluster_launcher.py uses the same steps.
#
#   scripts/loopback_cluster.sh prepare      # once: sshd + rsync (apt), an SSH key, authorized;
#                                            #   a Ray auth token; ~/grokray-venv -> this venv
#   scripts/loopback_cluster.sh sshd-start   # sshd on 127.0.0.1:22 and 127.0.0.2:22 in its own
#                                            #   PID namespace (pid file: $STATE/sshd.pid)
#   scripts/loopback_cluster.sh sshd-stop    # kill that namespace: every process that came in
#                                            #   over SSH (the cluster's Rays too) ends with it
#   scripts/loopback_cluster.sh check        # exit 0 when key login to 127.0.0.1 works
#   scripts/loopback_cluster.sh wait-nodes N # until N Ray nodes are alive (after `ray up`; asks
#                                            #   the dashboard at $RAY_DASHBOARD, default
#                                            #   http://127.0.0.1:8265; at most 5 minutes)
#
# Why a PID namespace: `ray down` runs `ray stop` on the head, and `ray stop` kills every Ray
# process it can see. Inside the namespace it sees only the cluster's own processes, never an
# embedded Ray of another user of this machine.
#
# Environment: GROKRAY_SSH_KEY (default ~/.ssh/grokray_cluster), GROKRAY_CLUSTER_STATE (default
# /tmp/grokray-cluster-sshd: host keys, sshd config, pid file, log), GROKRAY_VENV (default
# ~/grokray-venv: the env whose `ray` the SSH sessions find on their PATH).
set -euo pipefail

KEY="${GROKRAY_SSH_KEY:-$HOME/.ssh/grokray_cluster}"
STATE="${GROKRAY_CLUSTER_STATE:-/tmp/grokray-cluster-sshd}"
VENV="${GROKRAY_VENV:-$HOME/grokray-venv}"
SSHD="$(command -v sshd || echo /usr/sbin/sshd)"

die() { echo "loopback_cluster: $*" >&2; exit 2; }

prepare() {
    if ! { [ -x "$SSHD" ] && command -v rsync >/dev/null; }; then
        [ "$(id -u)" = 0 ] || die "needs root to install openssh-server and rsync (apt-get)"
        command -v apt-get >/dev/null || die "no apt-get: install an SSH server and rsync by hand"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server rsync >/dev/null
    fi
    mkdir -p "$HOME/.ssh" && chmod 700 "$HOME/.ssh"
    [ -f "$KEY" ] || ssh-keygen -q -t ed25519 -N "" -C grokray-cluster -f "$KEY"
    touch "$HOME/.ssh/authorized_keys" && chmod 600 "$HOME/.ssh/authorized_keys"
    grep -qF "$(cut -d' ' -f2 "$KEY.pub")" "$HOME/.ssh/authorized_keys" \
        || cat "$KEY.pub" >> "$HOME/.ssh/authorized_keys"
    # the cluster runs with RAY_AUTH_MODE=token; every node and client reads ~/.ray/auth_token
    command -v ray >/dev/null || die "no 'ray' on PATH: activate grokray's venv first"
    [ -f "$HOME/.ray/auth_token" ] || ray get-auth-token --generate >/dev/null
    # cluster.onprem.yaml starts Ray from ~/grokray-venv on every node: here, this venv
    local venv
    venv="$(python -c 'import sys; print(sys.prefix)')"
    # a link left dangling (its venv since removed) is replaced; a live one is the user's
    if [ -L "$HOME/grokray-venv" ] && [ ! -e "$HOME/grokray-venv" ]; then rm "$HOME/grokray-venv"; fi
    if [ ! -e "$HOME/grokray-venv" ]; then ln -s "$venv" "$HOME/grokray-venv"; fi
    echo "prepared: sshd $SSHD, rsync $(command -v rsync), key $KEY (authorized)," \
         "token ~/.ray/auth_token, ~/grokray-venv -> $(readlink -f "$HOME/grokray-venv")"
}

sshd_start() {
    [ -x "$SSHD" ] || die "no sshd: run '$0 prepare'"
    if [ -f "$STATE/sshd.pid" ] && kill -0 "$(cat "$STATE/sshd.pid")" 2>/dev/null; then
        echo "sshd already running (pid $(cat "$STATE/sshd.pid"))"; return 0
    fi
    mkdir -p "$STATE" /run/sshd && chmod 700 "$STATE"
    [ -f "$STATE/host_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -f "$STATE/host_ed25519"
    cat > "$STATE/sshd_config" <<EOF
Port 22
ListenAddress 127.0.0.1
ListenAddress 127.0.0.2
HostKey $STATE/host_ed25519
PidFile none
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AuthorizedKeysFile .ssh/authorized_keys
MaxStartups 50:30:100
MaxSessions 50
EOF
    # `ray down` runs a plain `ray stop` on the head, so `ray` must be on a login shell's PATH
    # there. Inside the namespace only, a bind mount puts ~/grokray-venv/bin/ray in
    # /usr/local/sbin (first on Debian's PATH); nothing changes for the rest of the machine.
    [ -x "$VENV/bin/ray" ] || die "no $VENV/bin/ray: run '$0 prepare'"
    mkdir -p "$STATE/sbin" && ln -sfn "$VENV/bin/ray" "$STATE/sbin/ray"
    # --kill-child: when unshare dies, sshd (pid 1 of the namespace) gets SIGKILL, and with it
    # every process in the namespace. The mount namespace is private: the bind stays inside.
    setsid unshare --pid --fork --mount-proc --kill-child sh -c \
        'mount --bind "$1" /usr/local/sbin && exec "$2" -D -e -f "$3"' sh \
        "$STATE/sbin" "$SSHD" "$STATE/sshd_config" >"$STATE/sshd.log" 2>&1 < /dev/null &
    echo $! > "$STATE/sshd.pid"
    for _ in $(seq 50); do
        if (exec 3<>/dev/tcp/127.0.0.2/22) 2>/dev/null; then
            echo "sshd running in its own PID namespace (pid $(cat "$STATE/sshd.pid"))"
            return 0
        fi
        kill -0 "$(cat "$STATE/sshd.pid")" 2>/dev/null || break
        sleep 0.1
    done
    cat "$STATE/sshd.log" >&2
    sshd_stop
    die "sshd did not start (port 22 taken?)"
}

sshd_stop() {
    [ -f "$STATE/sshd.pid" ] || return 0
    local pid
    pid="$(cat "$STATE/sshd.pid")"
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$STATE/sshd.pid"
    echo "sshd stopped (its PID namespace is gone)"
}

check() {
    [ -f "$KEY" ] || die "no key $KEY: run '$0 prepare'"
    command -v rsync >/dev/null || die "no rsync: run '$0 prepare'"
    ssh -i "$KEY" -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null \
        -o ConnectTimeout=5 -o LogLevel=ERROR "$(id -un)@127.0.0.1" true \
        || die "no key login to $(id -un)@127.0.0.1 (is sshd running? '$0 sshd-start')"
}

wait_nodes() {
    local want="${1:?wait-nodes N}" url="${RAY_DASHBOARD:-http://127.0.0.1:8265}" n=0
    local deadline=$((SECONDS + 300))
    while [ "$SECONDS" -lt "$deadline" ]; do
        n="$(RAY_AUTH_MODE="${RAY_AUTH_MODE:-token}" ray list nodes --address "$url" \
                 --filter state=ALIVE --format json 2>/dev/null \
             | python -c 'import json, sys; print(len(json.load(sys.stdin)))' 2>/dev/null \
             || echo 0)"
        if [ "$n" -ge "$want" ]; then echo "$n Ray nodes alive"; return 0; fi
        sleep 3
    done
    die "only $n of $want Ray nodes alive after 5 minutes (autoscaler: monitor.* in the head's logs)"
}

case "${1:-}" in
    prepare) prepare ;;
    sshd-start) sshd_start ;;
    sshd-stop) sshd_stop ;;
    check) check ;;
    wait-nodes) wait_nodes "${2:-}" ;;
    *) die "usage: $0 prepare | sshd-start | sshd-stop | check | wait-nodes N" ;;
esac
