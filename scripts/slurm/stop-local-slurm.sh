#!/usr/bin/env bash
# Stops the private cluster that start-local-slurm.sh started from DIR: ends
# slurmd, slurmctld and munged by the process ids in their pid files (nothing
# else), waiting for each to exit.
#
# usage: stop-local-slurm.sh [DIR]     (default: $TMPDIR/manifold-slurm, TMPDIR defaulting to /tmp)
set -uo pipefail
DIR=${1:-${TMPDIR:-/tmp}/manifold-slurm}
[ -d "$DIR/run" ] || { echo "stop-local-slurm: nothing runs from $DIR" >&2; exit 0; }

stop_pid_file() {
  local file=$1 pid
  [ -f "$file" ] || return 0
  pid=$(cat "$file" 2>/dev/null)
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null; fi
  fi
  rm -f "$file"
}
stop_pid_file "$DIR/run/slurmd.pid"
stop_pid_file "$DIR/run/slurmctld.pid"
stop_pid_file "$DIR/run/munged.pid"
echo "stop-local-slurm: stopped the cluster of $DIR"
