#!/usr/bin/env bash
# Issue 20, item 4: a single-node Slurm cluster on localhost (Debian's slurm-wlm and munge, which
# .ci/setup installs), started here with a config, key and ports of its own and stopped after;
# deploy/slurm/sweep.sbatch submitted as a 4-task array over configs/sweeps/example.pbtxt, waited
# for with a bound, its shards merged, and the merged results.csv required to equal a serial
# sweep's byte for byte. If a daemon cannot start, the test says why and fails.
#   slurm_sweep_test.sh TPUSIM SOURCE_DIR WORK_DIR
set -euo pipefail
tpusim=$1
source_dir=$2
work=$3

fail() {
  echo "slurm test: $*" >&2
  for log in "$work"/log/*.log; do
    [ -f "$log" ] && { echo "--- $log" >&2; tail -n 20 "$log" >&2; }
  done
  exit 1
}

for tool in munged slurmctld slurmd sbatch squeue sinfo; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (.ci/setup installs slurm-wlm and munge)"
done
rm -rf "$work"
mkdir -p "$work"/state "$work"/spool "$work"/log "$work"/run
user=$(id -un)
# Ports of our own, so that a Slurm already on this machine is left alone.
port=$((20000 + RANDOM % 20000))

cleanup() {
  for daemon in slurmd slurmctld; do
    if [ -f "$work/run/$daemon.pid" ]; then kill "$(cat "$work/run/$daemon.pid")" 2>/dev/null || true; fi
  done
  munged -s --socket="$work/run/munge.socket" >/dev/null 2>&1 || true
}
trap cleanup EXIT

dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$work/munge.key"
munged -f --key-file="$work/munge.key" --socket="$work/run/munge.socket" --log-file="$work/log/munged.log" \
  --pid-file="$work/run/munged.pid" --seed-file="$work/state/munged.seed" ||
  fail "munged did not start"

cat >"$work/slurm.conf" <<CONF
ClusterName=tpusimtest
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
AuthType=auth/munge
AuthInfo=socket=$work/run/munge.socket
CredType=cred/munge
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/run/slurmctld.pid
SlurmdPidFile=$work/run/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
ReturnToService=2
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=localhost CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"
slurmctld -c || fail "slurmctld did not start"
slurmd || fail "slurmd did not start"
for _ in $(seq 1 30); do
  if sinfo -h -o %t 2>/dev/null | grep -q idle; then break; fi
  sleep 1
done
sinfo -h -o %t 2>/dev/null | grep -q idle || fail "the node did not come up idle within 30 s"

sweep="$source_dir/configs/sweeps/example.pbtxt"
job=$(cd "$source_dir" && sbatch --parsable --array=0-3 --output="$work/log/task-%a.log" \
  --export=ALL,TPUSIM="$tpusim" deploy/slurm/sweep.sbatch "$sweep" "$work/out") || fail "sbatch failed"
for _ in $(seq 1 180); do
  if [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; then break; fi
  sleep 1
done
[ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && [ -f "$work/out/shard-3/results.csv" ] ||
  fail "job array $job did not finish its 4 tasks within 180 s"
for task in 0 1 2 3; do
  [ -f "$work/out/shard-$task/results.csv" ] || fail "task $task wrote no results.csv"
done

"$tpusim" sweep-merge "$work"/out/shard-0 "$work"/out/shard-1 "$work"/out/shard-2 "$work"/out/shard-3 \
  -o "$work/merged" >/dev/null || fail "sweep-merge failed"
"$tpusim" sweep "$sweep" -o "$work/serial" --quiet >/dev/null || fail "the serial sweep failed"
cmp "$work/merged/results.csv" "$work/serial/results.csv" || fail "the merged results differ from the serial run's"
echo "slurm test: a 4-task job array's shards merged equal the serial sweep ($(($(wc -l <"$work/serial/results.csv") - 1)) points)"
