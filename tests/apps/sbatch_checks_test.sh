#!/usr/bin/env bash
# The shipped train sbatch scripts check PART_DIR before anything else: a file, a missing path or a directory
# without meta.json ends the script with exit 2 and one line saying PART_DIR is not a partition directory
# (before: `sed: can't read .../meta.json` first). Runs the scripts with bash, outside Slurm: the check comes
# before srun.
#   sbatch_checks_test.sh SOURCE_DIR
set -u
src="${1:?usage: sbatch_checks_test.sh SOURCE_DIR}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
echo "not a directory" >"$work/file.h5"
mkdir -p "$work/empty"
for script in train_cpu.sbatch train_gpu.sbatch; do
  for part_dir in "$work/file.h5" "$work/missing" "$work/empty"; do
    out=$(PART_DIR="$part_dir" SLURM_NTASKS=2 HALOGEN=/bin/false bash "$src/scripts/slurm/$script" 2>&1)
    rc=$?
    [ "$rc" -eq 2 ] || fail "$script PART_DIR=$part_dir: exit $rc, expected 2: $out"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$script PART_DIR=$part_dir: more than one line: $out"
    grep -q "^train: error: PART_DIR=$part_dir is not a partition directory" <<<"$out" ||
      fail "$script PART_DIR=$part_dir: message: $out"
    echo "ok  $script $(basename "$part_dir"): $out"
  done
done
echo "sbatch checks passed"
