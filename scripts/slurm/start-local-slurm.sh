#!/usr/bin/env bash
# Starts a private single-node Slurm cluster on this machine, as root: its own
# munged (own key and socket), slurmctld and slurmd, with every file (config,
# state, logs, pid files) under DIR, so an existing Slurm or munge setup of the
# machine is left untouched. Client commands find it through
#   export SLURM_CONF=DIR/slurm.conf
# Stop it with stop-local-slurm.sh DIR. Exits non-zero with the reason (and the
# tail of the daemon's log) when something cannot start.
#
# usage: start-local-slurm.sh [DIR]     (default: $TMPDIR/manifold-slurm, TMPDIR defaulting to /tmp)
# env:   MANIFOLD_SLURMCTLD_PORT (6817), MANIFOLD_SLURMD_PORT (6818)
set -euo pipefail

DIR=${1:-${TMPDIR:-/tmp}/manifold-slurm}
CTLD_PORT=${MANIFOLD_SLURMCTLD_PORT:-6817}
SLURMD_PORT=${MANIFOLD_SLURMD_PORT:-6818}

fail() { echo "start-local-slurm: $*" >&2; exit 1; }
show_log() { [ -f "$1" ] && { echo "--- last lines of $1:" >&2; tail -n 15 "$1" >&2; }; return 0; }

[ "$(id -u)" = 0 ] || fail "must run as root (slurmd launches jobs as their user); run as root or use sudo"
for tool in munged mungekey slurmctld slurmd sinfo scontrol; do
  command -v "$tool" >/dev/null || fail "'$tool' not found: install the Debian packages slurm-wlm and munge"
done

mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
if [ -f "$DIR/run/slurmctld.pid" ] && kill -0 "$(cat "$DIR/run/slurmctld.pid")" 2>/dev/null; then
  fail "a cluster already runs from $DIR (stop it first with stop-local-slurm.sh $DIR)"
fi
rm -rf "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run" "$DIR/munge"
mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log" "$DIR/run" "$DIR/munge"
# Whatever this script started is stopped again when it fails half-way.
started_ok=0
cleanup() { [ "$started_ok" = 1 ] || bash "$(dirname "$0")/stop-local-slurm.sh" "$DIR" >/dev/null 2>&1; }
trap cleanup EXIT
# munged refuses sockets and keys in directories that others can write to.
chmod 755 "$DIR"
chmod 700 "$DIR/munge"

# --- munge: a private daemon with its own key and socket -------------------
MUNGE_SOCKET="$DIR/munge/munge.socket"
mungekey --create --keyfile="$DIR/munge/munge.key" --bits=1024 >/dev/null 2>&1 ||
  fail "mungekey could not create $DIR/munge/munge.key"
chmod 400 "$DIR/munge/munge.key"
munged --force --socket="$MUNGE_SOCKET" --key-file="$DIR/munge/munge.key" \
  --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" \
  --seed-file="$DIR/munge/munged.seed" 2>"$DIR/log/munged.err" ||
  { cat "$DIR/log/munged.err" >&2; show_log "$DIR/log/munged.log"; fail "munged did not start"; }
for _ in $(seq 50); do [ -S "$MUNGE_SOCKET" ] && break; sleep 0.1; done
[ -S "$MUNGE_SOCKET" ] || { show_log "$DIR/log/munged.log"; fail "munged started but its socket $MUNGE_SOCKET did not appear"; }

# --- slurm.conf for this host ------------------------------------------------
HOST=$(hostname -s)
mkdir -p "$DIR/spool/slurmd-$HOST"
# Slurm addresses the node by name; when the name does not resolve, pin it to loopback.
ADDR=$(getent hosts "$HOST" | awk '{print $1; exit}')
[ -n "$ADDR" ] || ADDR=127.0.0.1
CPUS=$(nproc)
MEM_MB=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
cat >"$DIR/slurm.conf" <<CONF
# Written by start-local-slurm.sh: a single-node cluster for tests and demos.
ClusterName=manifold-local
SlurmctldHost=$HOST($ADDR)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/slurmd-%n
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# Containers and CI machines rarely give a usable cgroup hierarchy.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
# Fast turnaround for short test jobs and quick cancellation.
KillWait=5
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
NodeName=$HOST NodeAddr=$ADDR CPUs=$CPUS RealMemory=$MEM_MB State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
# slurmd 22.05 initialises a cgroup plugin even with linuxproc tracking; v1
# (or v2 on a pure cgroup2 machine) with no resource constraints only needs the mount.
if [ -f /sys/fs/cgroup/cgroup.controllers ]; then CGROUP=cgroup/v2; else CGROUP=cgroup/v1; fi
cat >"$DIR/cgroup.conf" <<CONF
CgroupPlugin=$CGROUP
CgroupMountpoint=/sys/fs/cgroup
ConstrainCores=no
ConstrainRAMSpace=no
ConstrainDevices=no
CONF

export SLURM_CONF="$DIR/slurm.conf"
slurmctld -c -f "$SLURM_CONF" 2>"$DIR/log/slurmctld.err" ||
  { cat "$DIR/log/slurmctld.err" >&2; show_log "$DIR/log/slurmctld.log"; fail "slurmctld did not start"; }
slurmd -f "$SLURM_CONF" 2>"$DIR/log/slurmd.err" ||
  { cat "$DIR/log/slurmd.err" >&2; show_log "$DIR/log/slurmd.log"; fail "slurmd did not start"; }

# Wait until the node takes jobs.
state=""
for _ in $(seq 60); do
  state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null | head -n1 || true)
  case "$state" in idle|idle*|mixed|allocated) break ;; esac
  sleep 0.5
done
case "$state" in
  idle|idle*|mixed|allocated) ;;
  *) show_log "$DIR/log/slurmctld.log"; show_log "$DIR/log/slurmd.log"
     fail "node $HOST did not become idle within 30 s (state '${state:-unknown}')" ;;
esac
started_ok=1
echo "start-local-slurm: node $HOST is $state; export SLURM_CONF=$SLURM_CONF"
