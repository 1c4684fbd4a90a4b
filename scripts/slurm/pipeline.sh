#!/usr/bin/env bash
# Halogen pipeline on Slurm: submits the preprocessing job (convert or generate, then partition into PARTS
# parts) and the training job, which starts only if preprocessing succeeded (--dependency=afterok) and is
# cancelled if it failed (--kill-on-invalid-dep=yes). Returns right after submitting (or, with --wait, when
# training has finished, with its exit status).
#
# Usage:    scripts/slurm/pipeline.sh [--gpu | --cpu] [--wait] [--dry-run]
#   --gpu       train with scripts/slurm/train_gpu.sbatch, one rank per GPU (default)
#   --cpu       train with scripts/slurm/train_cpu.sbatch, one rank per CPU_RANKS_PER_NODE slot
#   --wait      wait for the training job and exit with its status
#   --dry-run   print the sbatch commands instead of running them
#
# Example (ogbn-products on 2 nodes x 4 GPUs, 8 parts):
#   GRAPH=$SCRATCH/products.h5 CONVERT_ARGS="$SCRATCH/products" PARTS=8 NODES=2 \
#     TRAIN_ARGS="--model gcn --layers 3 --hidden 256 --epochs 500" scripts/slurm/pipeline.sh --gpu
#
# Parameters (environment variables):
#   everything scripts/slurm/preprocess.sbatch reads: HALOGEN GRAPH CONVERT_ARGS GENERATE_ARGS PARTS PART_DIR
#     PART_METHOD PARTITION_ARGS FORCE (GRAPH and PARTS are required here)
#   everything the training template reads: METRICS TRAIN_ARGS SRUN_ARGS
#   NODES               nodes of the training job                          default: 1
#   TASKS_PER_NODE      ranks per node; NODES x TASKS_PER_NODE must be PARTS   default: PARTS / NODES
#   CPUS_PER_TASK       cores per rank                                     default: the template's
#   PREPROCESS_CPUS     cores of the preprocessing job                     default: 1
#   SBATCH_ARGS         extra sbatch flags for both jobs (--partition, --account, --time, ...)   default: none
#   PREPROCESS_SBATCH_ARGS, TRAIN_SBATCH_ARGS   extra sbatch flags for one of the jobs          default: none
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mode=gpu wait=0 dry_run=0
for arg in "$@"; do
  case "$arg" in
    --gpu) mode=gpu ;;
    --cpu) mode=cpu ;;
    --wait) wait=1 ;;
    --dry-run) dry_run=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "pipeline: error: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done

: "${GRAPH:?set GRAPH (graph file to write or read)}"
: "${PARTS:?set PARTS (number of parts = training ranks)}"
NODES=${NODES:-1}
if [ $((PARTS % NODES)) -ne 0 ] && [ -z "${TASKS_PER_NODE:-}" ]; then
  echo "pipeline: error: PARTS=$PARTS is not a multiple of NODES=$NODES; set TASKS_PER_NODE" >&2
  exit 2
fi
TASKS_PER_NODE=${TASKS_PER_NODE:-$((PARTS / NODES))}
if [ $((NODES * TASKS_PER_NODE)) -ne "$PARTS" ]; then
  echo "pipeline: error: NODES x TASKS_PER_NODE = $((NODES * TASKS_PER_NODE)) but PARTS=$PARTS" >&2
  exit 2
fi
export PART_DIR=${PART_DIR:-${GRAPH%.h5}.p${PARTS}}
export GRAPH PARTS

# shellcheck disable=SC2206  # word lists on purpose
common=(--parsable ${SBATCH_ARGS:-})
# shellcheck disable=SC2206
preprocess=(sbatch "${common[@]}" --cpus-per-task="${PREPROCESS_CPUS:-1}" ${PREPROCESS_SBATCH_ARGS:-}
            "$here/preprocess.sbatch")
# shellcheck disable=SC2206
train=(sbatch "${common[@]}" --nodes="$NODES" --ntasks-per-node="$TASKS_PER_NODE" --ntasks="$PARTS"
       ${CPUS_PER_TASK:+--cpus-per-task=$CPUS_PER_TASK} ${TRAIN_SBATCH_ARGS:-})
if [ "$mode" = gpu ]; then train+=(--gpus-per-node="$TASKS_PER_NODE" "$here/train_gpu.sbatch")
else train+=("$here/train_cpu.sbatch"); fi

if [ "$dry_run" = 1 ]; then
  echo "${preprocess[*]}"
  echo "${train[*]/#sbatch/sbatch --dependency=afterok:<preprocess> --kill-on-invalid-dep=yes}"
  exit 0
fi

pre_id=$("${preprocess[@]}")
pre_id=${pre_id%%;*}
echo "pipeline: preprocess job $pre_id ($GRAPH -> $PART_DIR, $PARTS parts)"
train_cmd=("${train[0]}" --dependency=afterok:"$pre_id" --kill-on-invalid-dep=yes "${train[@]:1}")
train_id=$("${train_cmd[@]}")
train_id=${train_id%%;*}
echo "pipeline: train job $train_id ($mode, $NODES node(s) x $TASKS_PER_NODE ranks, after $pre_id)"

if [ "$wait" = 1 ]; then
  # Poll (sbatch --wait cannot attach to a job already submitted); squeue forgets finished jobs, scontrol
  # remembers them for MinJobAge seconds.
  while :; do
    state=$(scontrol show job "$train_id" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
    case "$state" in
      COMPLETED) echo "pipeline: train job $train_id completed"; exit 0 ;;
      FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)
        echo "pipeline: train job $train_id ended $state" >&2; exit 1 ;;
    esac
    sleep 2
  done
fi
