#!/usr/bin/env bash
# Issue 20: the command line of deploy/k8s/sweep-job.yaml's container, run here as Kubernetes would
# run it for each completion index (JOB_COMPLETION_INDEX 0..SHARDS-1, the Job's env with SWEEP and
# OUT pointed at this test's files, `tpusim` on PATH), over configs/sweeps/example.pbtxt; the
# merged shards must equal a serial sweep. No cluster runs here: this checks the Job's command,
# its env and its sharding, not Kubernetes.
#   k8s_job_command_test.sh TPUSIM SOURCE_DIR WORK_DIR
set -euo pipefail
tpusim=$1
source_dir=$2
work=$3
job="$source_dir/deploy/k8s/sweep-job.yaml"
rm -rf "$work"
mkdir -p "$work/bin"
ln -s "$tpusim" "$work/bin/tpusim"

# The container's shell line, and the shard count from the Job (completions = SHARDS).
line=$(grep -A1 '^ *args:' "$job" | tail -n 1 | sed 's/^ *- //')
shards=$(grep -A1 'name: SHARDS' "$job" | tail -n 1 | sed 's/.*value: "\(.*\)"/\1/')
completions=$(sed -n 's/^ *completions: *//p' "$job")
[ "$shards" = "$completions" ] || { echo "k8s test: SHARDS ($shards) is not completions ($completions)" >&2; exit 1; }
for ((index = 0; index < shards; ++index)); do
  env PATH="$work/bin:$PATH" JOB_COMPLETION_INDEX=$index SHARDS=$shards \
    SWEEP="$source_dir/configs/sweeps/example.pbtxt" OUT="$work/out" /bin/sh -c "$line --quiet" >/dev/null
done
"$tpusim" sweep-merge "$work"/out/shard-* -o "$work/merged" >/dev/null
"$tpusim" sweep "$source_dir/configs/sweeps/example.pbtxt" -o "$work/serial" --quiet >/dev/null
cmp "$work/merged/results.csv" "$work/serial/results.csv"
echo "k8s test: $shards indices of the Job's command merged equal the serial sweep"
