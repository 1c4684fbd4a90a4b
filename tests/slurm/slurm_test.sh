#!/usr/bin/env bash
# End-to-end Slurm test (ctest label `slurm`): a real one-node Slurm cluster on localhost (munged, slurmctld,
# slurmd from tests/slurm/local_cluster.sh, 2 CPUs, MpiDefault=pmix), then
#   1. `srun --mpi=pmix -n 2` of the MPI smoke test: Slurm's PMIx wires up OpenMPI ranks;
#   2. scripts/slurm/pipeline.sh --cpu: the preprocessing template (generate an SBM graph, partition it into
#      2 parts) and the CPU training template (2 tasks, after the first job succeeded), as a user submits them;
#      checks both jobs COMPLETED with exit 0 and the metrics file ends with a "final": true record;
#   3. the CPU template with 1 task on the 2-part directory: FAILED with a one-line reason;
#   4. the CPU template with 1 task and --cpus-per-task=2 (a 1-part directory): the rank sees both cores -
#      OMP_NUM_THREADS=2, an affinity mask of 2 CPUs (under task/affinity, srun without --cpus-per-task binds it
#      to one since Slurm 22.05) and halogen's "2 threads per rank".
# Daemons are stopped by pid on every exit path (trap). Bounded: every wait has a deadline.
#
# Usage: slurm_test.sh HALOGEN_BIN MPI_SMOKE_TEST_BIN       (exit 77 = skipped: Slurm or munge not installed)
# KEEP_SLURM_TEST_DIR=1 keeps the temporary directory (configs, daemon logs, job outputs) for inspection.
set -uo pipefail

halogen_bin=$(realpath "$1")
smoke_bin=$(realpath "$2")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)

for tool in munged mungekey slurmctld slurmd sbatch srun scontrol sinfo; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found (scripts/install-deps.sh installs slurm-wlm and munge)"
    exit 77
  fi
done
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the throw-away cluster runs its daemons as root (SlurmUser=root); run as root"
  exit 77
fi

# The templates parse, and the GPU pipeline submits what it says (one rank per GPU), before any daemon starts.
for f in "$source_dir"/scripts/slurm/*.sbatch "$source_dir"/scripts/slurm/*.sh; do
  bash -n "$f" || { echo "FAIL: bash -n $f"; exit 1; }
done
dry=$(GRAPH=/x/g.h5 PARTS=8 NODES=2 "$source_dir/scripts/slurm/pipeline.sh" --gpu --dry-run) ||
  { echo "FAIL: pipeline.sh --gpu --dry-run"; exit 1; }
grep -q -- "--dependency=afterok:<preprocess> .*--nodes=2 --ntasks-per-node=4 --ntasks=8 --gpus-per-node=4 .*train_gpu.sbatch" \
  <<<"$dry" || { echo "FAIL: pipeline.sh --gpu --dry-run printed: $dry"; exit 1; }

# shellcheck source=local_cluster.sh
source "$here/local_cluster.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/halogen-slurm-test.XXXXXX")
finish() {
  local rc=$?
  cluster_stop
  if [ "$rc" -ne 0 ] || [ "${KEEP_SLURM_TEST_DIR:-0}" = 1 ]; then echo "slurm test: files kept in $work"
  else rm -rf "$work"; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

fail() {
  echo "FAIL: $*"
  cluster_logs
  for f in "$work"/*.out; do [ -f "$f" ] && { echo "----- $f"; tail -n 40 "$f"; }; done
  exit 1
}

wait_job() { slurm_wait_job "$1" "$2"; }  # scripts/cluster/slurm_common.sh (sourced by local_cluster.sh)
job_exit() { scontrol show job "$1" | sed -n 's/.*[^a-zA-Z]ExitCode=\([0-9:]*\).*/\1/p'; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
cluster_start "$work/cluster" 2 || fail "the cluster did not start"
srun --mpi=list 2>&1 | grep -q pmix || fail "srun --mpi=list has no pmix plugin"
cd "$work" || exit 1

# 1. MPI through Slurm's PMIx: two ranks see each other.
echo "slurm test: srun --mpi=pmix -n 2 $(basename "$smoke_bin")"
timeout 60 srun --mpi=pmix -n 2 "$smoke_bin" >"$work/smoke.out" 2>&1 || fail "srun --mpi=pmix -n 2 of the MPI smoke test"
grep -q "PASSED" "$work/smoke.out" || fail "MPI smoke test output has no PASSED"

# 2. The user's pipeline: preprocess (generate + partition) then CPU training, chained by a dependency.
export HALOGEN="$halogen_bin" GRAPH="$work/sbm.h5" PARTS=2 PART_DIR="$work/sbm.p2" METRICS="$work/metrics.jsonl"
export GENERATE_ARGS="sbm --nodes 1200 --classes 4 --avg-degree 8 --features 16 --seed 7"
export TRAIN_ARGS="--epochs 5 --hidden 16"
export CPUS_PER_TASK=1 NODES=1
"$source_dir/scripts/slurm/pipeline.sh" --cpu >"$work/pipeline.out" 2>&1 || fail "pipeline.sh: $(cat "$work/pipeline.out")"
cat "$work/pipeline.out"
pre_id=$(sed -n 's/^pipeline: preprocess job \([0-9]*\).*/\1/p' "$work/pipeline.out")
train_id=$(sed -n 's/^pipeline: train job \([0-9]*\).*/\1/p' "$work/pipeline.out")
[ -n "$pre_id" ] && [ -n "$train_id" ] || fail "pipeline.sh did not report two job ids"

state=$(wait_job "$pre_id" 60)
[ "$state" = COMPLETED ] && [ "$(job_exit "$pre_id")" = 0:0 ] ||
  fail "preprocess job $pre_id ended $state, exit $(job_exit "$pre_id")"
grep -q "^preprocess: done" "$work/halogen-preprocess-$pre_id.out" || fail "preprocess job did not report done"
[ -f "$PART_DIR/meta.json" ] || fail "no $PART_DIR/meta.json after the preprocess job"

state=$(wait_job "$train_id" 90)
[ "$state" = COMPLETED ] && [ "$(job_exit "$train_id")" = 0:0 ] ||
  fail "train job $train_id ended $state, exit $(job_exit "$train_id")"
out="$work/halogen-train-cpu-$train_id.out"
grep -q "2 ranks" "$out" || fail "train job output does not say 2 ranks"
[ -s "$METRICS" ] || fail "no metrics file $METRICS"
python3 - "$METRICS" <<'PY' || fail "metrics file check"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
final = [r for r in records if r.get("final") is True]
epochs = [r for r in records if "epoch" in r and not r.get("final")]
assert final, "no record with \"final\": true"
assert records[-1].get("final") is True, "the last record is not the final one"
assert len(epochs) == 5, f"{len(epochs)} epoch records, expected 5"
assert final[-1].get("ranks") == 2, f"final record says ranks = {final[-1].get('ranks')}, expected 2"
print(f"metrics: {len(epochs)} epochs, final record: {json.dumps(final[-1])[:200]}")
PY
# 3. The training template refuses a job whose task count differs from the partition's part count, with a
#    one-line reason, before any rank starts.
bad_id=$(sbatch --parsable --ntasks=1 --ntasks-per-node=1 "$source_dir/scripts/slurm/train_cpu.sbatch") ||
  fail "sbatch of the mismatched training job"
bad_id=${bad_id%%;*}
state=$(wait_job "$bad_id" 60)
[ "$state" = FAILED ] || fail "training job with 1 task for 2 parts ended $state, expected FAILED"
grep -q "has 2 parts but the job has 1 tasks" "$work/halogen-train-cpu-$bad_id.out" ||
  fail "the mismatched training job did not say why: $(cat "$work/halogen-train-cpu-$bad_id.out")"

# 4. A rank gets all the cores of its task: HALOGEN is a wrapper that reports the rank's environment and CPU
#    affinity (what srun gave it), then runs halogen.
"$halogen_bin" partition "$GRAPH" -k 1 -o "$work/sbm.p1" >/dev/null || fail "partition -k 1"
cat >"$work/halogen-wrapper.sh" <<EOF
#!/usr/bin/env bash
echo "wrapper: rank \${SLURM_PROCID:-?} OMP_NUM_THREADS=\${OMP_NUM_THREADS:-unset} \$(grep Cpus_allowed_list /proc/self/status | tr -d '\t')"
exec "$halogen_bin" "\$@"
EOF
chmod +x "$work/halogen-wrapper.sh"
cores_id=$(HALOGEN="$work/halogen-wrapper.sh" PART_DIR="$work/sbm.p1" METRICS="$work/cores.jsonl" TRAIN_ARGS="--epochs 2" \
  sbatch --parsable --ntasks=1 --ntasks-per-node=1 --cpus-per-task=2 "$source_dir/scripts/slurm/train_cpu.sbatch") ||
  fail "sbatch of the 2-cores-per-task training job"
cores_id=${cores_id%%;*}
state=$(wait_job "$cores_id" 90)
out="$work/halogen-train-cpu-$cores_id.out"
[ "$state" = COMPLETED ] || fail "training job with --cpus-per-task=2 ended $state"
line=$(grep "^wrapper: rank 0 " "$out") || fail "the wrapper did not report rank 0's environment"
echo "slurm test: $line"
grep -q "OMP_NUM_THREADS=2 " <<<"$line" || fail "rank 0 does not get OMP_NUM_THREADS=2: $line"
allowed=$(sed -n 's/.*Cpus_allowed_list:\(.*\)$/\1/p' <<<"$line")
count=$(python3 -c "import sys; print(sum(int(r.split('-')[-1]) - int(r.split('-')[0]) + 1 for r in sys.argv[1].split(',')))" "$allowed")
[ "$count" = 2 ] || fail "rank 0 may run on $count CPU(s) ($allowed), expected the task's 2 (task plugin $CLUSTER_TASK_PLUGIN)"
grep -q "| 2 threads per rank" "$out" || fail "halogen does not run 2 threads per rank: $(grep threads "$out")"

echo "slurm test: passed (task plugin $CLUSTER_TASK_PLUGIN)"
