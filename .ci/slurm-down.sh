#!/usr/bin/env bash
# Stop the daemons .ci/slurm-up.sh started (by their pid files; munged through its own
# --stop), leaving no job, daemon or socket behind. Safe to call when nothing is running.
set -uo pipefail

DIR="${SWEEP_SLURM_DIR:-/tmp/sweep-slurm}"

if command -v scancel >/dev/null && [ -e "$DIR/slurmctld.pid" ]; then
    scancel --user=root >/dev/null 2>&1 || true
fi
for daemon in slurmd slurmctld; do
    pidfile="$DIR/$daemon.pid"
    [ -s "$pidfile" ] || continue
    pid="$(cat "$pidfile")"
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 20); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
done
if [ -e /run/munge/munged.pid ] && command -v munged >/dev/null; then
    runuser -u munge -- /usr/sbin/munged --stop >/dev/null 2>&1 || true
fi
exit 0
