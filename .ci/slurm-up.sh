#!/usr/bin/env bash
# Start a one-node SLURM cluster on localhost (no systemd needed), for the integration test
# of `sweep submit`. Installs Debian's slurmctld, slurmd, slurm-client and munge when they are
# missing (needs root and a Debian mirror). Stop it again with .ci/slurm-down.sh.
#
# State, logs and pid files live in $SWEEP_SLURM_DIR (default /tmp/sweep-slurm); the config
# goes to $SLURM_CONF (default /etc/slurm/slurm.conf, where the client commands look for it).
set -euo pipefail

DIR="${SWEEP_SLURM_DIR:-/tmp/sweep-slurm}"
CONF="${SLURM_CONF:-/etc/slurm/slurm.conf}"
MARK="# written by sweep .ci/slurm-up.sh"

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null \
        || ! command -v sbatch >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
fi

# munge: the key (the package creates one, but not in every image) and the socket directory
# that systemd would otherwise create.
if [ ! -s /etc/munge/munge.key ]; then
    mkdir -p /etc/munge
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1 count=1024 status=none
fi
chown munge:munge /etc/munge/munge.key && chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
chmod 755 /run/munge
if ! munge -n </dev/null >/dev/null 2>&1; then  # no munged answering yet
    runuser -u munge -- /usr/sbin/munged
fi

# The node exactly as slurmd sees this machine (CPUs, sockets, RealMemory), so the node is
# never drained for advertising more than it has.
NODE="$(slurmd -C | head -n 1 | sed 's/^NodeName=[^ ]*//')"
HOST="$(hostname -s)"
mkdir -p "$DIR/state" "$DIR/spool" "$(dirname "$CONF")"
if [ -e "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
    echo "slurm-up: $CONF exists and was not written by this script; set SLURM_CONF" >&2
    exit 2
fi
cat > "$CONF" <<EOF
$MARK
ClusterName=sweepci
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/slurmctld.log
SlurmdLogFile=$DIR/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
DependencyParameters=kill_invalid_depend
EnforcePartLimits=ALL
MinJobAge=300
NodeName=$HOST NodeAddr=127.0.0.1 $NODE State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

slurmctld -c -f "$CONF"
slurmd -c -f "$CONF"

for _ in $(seq 60); do
    if [ "$(sinfo -h -o %T 2>/dev/null | head -n 1)" = "idle" ]; then
        echo "slurm-up: node $HOST idle ($NODE)"
        exit 0
    fi
    sleep 1
done
echo "slurm-up: the node did not become idle; see $DIR/slurmctld.log and $DIR/slurmd.log" >&2
sinfo -N -l >&2 || true
exit 1
