#!/usr/bin/env bash
# The emulated cluster (scripts/cluster/cluster.sh; ctest label `cluster`): real hosts in network namespaces,
# real Slurm and OpenMPI over TCP between them.
#
#   cluster_test.sh slurm   HALOGEN   2 and 4 hosts through Slurm (the shipped train_cpu.sbatch, unchanged):
#                                     distinct hosts in the metrics header, losses equal to the one-host 2-rank
#                                     run; then `down` leaves no namespace, cgroup, process or state behind
#   cluster_test.sh faults  HALOGEN   a killed host (Slurm), a dead link (mpirun), a stopped rank (one host), a
#                                     slow host (CPU quota 0.2): bounded ends, lines naming the peer, readable
#                                     checkpoints, the straggler in the metrics
#   cluster_test.sh elastic HALOGEN   a 2-host checkpoint resumed on 1 rank and a 1-rank one on 2 hosts
#
# Exit 77 (skipped) where network namespaces cannot be made (not root, no iproute2, a restricted container).
# KEEP_CLUSTER_TEST_DIR=1 keeps the work directory.
set -uo pipefail

mode=${1:?usage: cluster_test.sh slurm|faults|elastic HALOGEN}
halogen=$(realpath "${2:?usage: cluster_test.sh MODE HALOGEN}")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
cluster="$source_dir/scripts/cluster/cluster.sh"
compare() { python3 "$source_dir/tests/train/compare_metrics.py" "$@"; }

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: the emulated cluster needs root (network namespaces)"; exit 77; fi
for tool in ip tc nsenter unshare mpirun; do
  command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found"; exit 77; }
done
probe="halogen-probe-$$"
if ! ip netns add "$probe" 2>/dev/null; then echo "SKIP: cannot create a network namespace here"; exit 77; fi
ip netns del "$probe"
if [ "$mode" = slurm ] || [ "$mode" = faults ]; then
  for tool in munged slurmctld slurmd sbatch; do
    command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not found (scripts/install-deps.sh)"; exit 77; }
  done
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/halogen-cluster-test.XXXXXX")
export HALOGEN_CLUSTER_DIR="$work/cluster"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
finish() {
  local rc=$?
  bash "$cluster" down >/dev/null 2>&1
  if [ "$rc" -ne 0 ] || [ "${KEEP_CLUSTER_TEST_DIR:-0}" = 1 ]; then echo "cluster test: files kept in $work"
  else rm -rf "$work"; fi
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM
fail() {
  echo "FAIL: $*"
  for f in "$work"/*.out "$work"/*.txt; do [ -f "$f" ] && { echo "----- $f"; tail -n 30 "$f"; }; done
  tail -n 15 "$HALOGEN_CLUSTER_DIR"/slurm/log/*.log 2>/dev/null
  exit 1
}
on() { bash "$cluster" exec "$@"; }
up() { bash "$cluster" up "$@" >"$work/up.txt" 2>&1 || fail "cluster.sh up $*: $(cat "$work/up.txt")"; }

# Nothing of the cluster is left: namespaces, cgroups, processes in them, the state directory.
check_down() {
  local prefix
  prefix="halogen-$(printf '%s' "$(realpath -m "$HALOGEN_CLUSTER_DIR")" | sha1sum | cut -c1-6)"
  [ -d "$HALOGEN_CLUSTER_DIR" ] && prefix="halogen-$(printf '%s' "$(realpath "$HALOGEN_CLUSTER_DIR")" | sha1sum | cut -c1-6)"
  bash "$cluster" down >"$work/down.txt" 2>&1 || fail "cluster.sh down: $(cat "$work/down.txt")"
  bash "$cluster" down >>"$work/down.txt" 2>&1 || fail "a second cluster.sh down failed: $(cat "$work/down.txt")"
  ! ip netns list | grep -q "^$prefix-" || fail "namespaces left after down: $(ip netns list | grep "^$prefix-")"
  ! ls -d /sys/fs/cgroup/cpu/"$prefix"-* /sys/fs/cgroup/"$prefix"-* 2>/dev/null | grep -q . ||
    fail "cgroups left after down"
  [ ! -e "$HALOGEN_CLUSTER_DIR" ] || fail "state directory $HALOGEN_CLUSTER_DIR left after down"
  ! pgrep -f "slurm.conf.*$HALOGEN_CLUSTER_DIR|$HALOGEN_CLUSTER_DIR/slurm" >/dev/null ||
    fail "daemons left after down: $(pgrep -af "$HALOGEN_CLUSTER_DIR")"
  echo "cluster test: down left nothing behind ($prefix)"
}

# shellcheck source=../../scripts/cluster/slurm_common.sh
source "$source_dir/scripts/cluster/slurm_common.sh"
wait_job() { slurm_wait_job "$1" "$2" bash "$cluster" exec node1 --; }

# The pids of halogen processes (ranks, not their launchers) working in this test's directory.
ranks_running() {
  local p
  for p in $(pgrep -x halogen); do tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "$work" && echo "$p"; done
  return 0
}

# A host killed mid-epoch: waits for the job's first checkpoint in $1 (30 s), kills node2, and requires every
# rank to have ended within 30 s. $2 names the case in messages.
kill_node2_midrun() {
  local ck=$1 case=$2 start
  for _ in $(seq 1 300); do [ -f "$ck/last.h5" ] && break; sleep 0.1; done
  [ -f "$ck/last.h5" ] || fail "no checkpoint within 30 s ($case, killed host)"
  sleep 1
  start=$SECONDS
  bash "$cluster" kill node2 2>/dev/null
  for _ in $(seq 1 300); do [ -n "$(ranks_running)" ] || break; sleep 0.1; done
  [ -z "$(ranks_running)" ] || fail "a rank still runs 30 s after node2 was killed ($case)"
  echo "cluster test: killed host ($case): the other rank ended after $((SECONDS - start)) s"
}

hosts_of() { python3 -c 'import json,sys; print(",".join(json.loads(open(sys.argv[1]).readline())["hosts"]))' "$1"; }

"$halogen" generate sbm --nodes 3000 --classes 4 --avg-degree 10 --features 32 --seed 3 -o "$work/g.h5" >/dev/null ||
  fail "generate"
for k in 1 2 4; do
  "$halogen" partition "$work/g.h5" -k "$k" -o "$work/p$k" >/dev/null || fail "partition -k $k"
done
common=(--model gcn --hidden 16 --seed 4 --patience 0 --quiet)

case "$mode" in
slurm)
  # The reference: 2 ranks on this one host over shared memory.
  timeout 120 mpirun --oversubscribe --bind-to none -np 2 "$halogen" train "$work/p2" "${common[@]}" --epochs 8 \
    --metrics "$work/ref2.jsonl" >/dev/null 2>"$work/ref2.txt" || fail "the one-host 2-rank run"
  up 4 --bandwidth 10gbit --slurm
  bash "$cluster" status | grep -q "node4 .*link UP .*bandwidth 10gbit" || fail "status: $(bash "$cluster" status)"
  cd "$work" || exit 1
  for nodes in 2 4; do
    id=$(HALOGEN="$halogen" PART_DIR="$work/p$nodes" METRICS="$work/slurm$nodes.jsonl" \
      TRAIN_ARGS="${common[*]} --epochs 8" on node1 -- sbatch --parsable --nodes "$nodes" --ntasks-per-node 1 \
      "$source_dir/scripts/slurm/train_cpu.sbatch") || fail "sbatch --nodes $nodes"
    id=${id%%;*}
    state=$(wait_job "$id" 120)
    [ "$state" = COMPLETED ] || fail "the --nodes $nodes job ended $state: $(cat "$work/halogen-train-cpu-$id.out")"
    want=$(seq -s, -f 'node%g' 1 "$nodes")
    got=$(hosts_of "$work/slurm$nodes.jsonl")
    [ "$got" = "$want" ] || fail "--nodes $nodes: the metrics header names hosts $got, expected $want"
    echo "cluster test: sbatch --nodes $nodes trained on $got"
  done
  compare "$work/ref2.jsonl" "$work/slurm2.jsonl" --rel 1e-6 --min-epochs 8 ||
    fail "2 hosts through Slurm differ from 2 ranks on one host"
  check_down
  ;;

faults)
  cd "$work" || exit 1
  # 1. A host killed mid-epoch (Slurm, the default communication timeout of 600 s): the survivor ends within
  #    30 s with a line naming rank 1 and node2 (PeerLiveness: the lost rank's connection closed).
  up 2 --bandwidth 10gbit --slurm
  id=$(HALOGEN="$halogen" PART_DIR="$work/p2" METRICS="$work/kill.jsonl" \
    TRAIN_ARGS="${common[*]} --epochs 1000000 --checkpoint $work/ck-kill --checkpoint-every 20" \
    on node1 -- sbatch --parsable --nodes 2 --ntasks-per-node 1 "$source_dir/scripts/slurm/train_cpu.sbatch") ||
    fail "sbatch of the long job"
  id=${id%%;*}
  kill_node2_midrun "$work/ck-kill" Slurm
  sleep 1
  out="$work/halogen-train-cpu-$id.out"
  grep -E "error: lost rank 1 \(node2\)" "$out" >/dev/null || fail "no error line names rank 1 (node2): $(cat "$out")"
  grep -E "error: lost rank 1 \(node2\)" "$out" | head -n 1
  "$halogen" predict "$work/p1" --checkpoint "$work/ck-kill" -o "$work/kill-pred.h5" >/dev/null 2>&1 ||
    fail "the checkpoint of the killed job is not readable"
  check_down

  #    The same under mpirun (which runs on node1 and relays every rank's output).
  up 2 --bandwidth 10gbit
  bash "$cluster" mpirun -np 2 "$halogen" train "$work/p2" "${common[@]}" --epochs 1000000 --checkpoint "$work/ck-kill0" \
    --checkpoint-every 20 >"$work/kill0.txt" 2>&1 &
  job=$!
  kill_node2_midrun "$work/ck-kill0" mpirun
  wait "$job" && fail "the job whose node2 was killed exited 0"
  grep -E "error: lost rank 1 \(node2\)" "$work/kill0.txt" || fail "no error line names rank 1 (node2) (mpirun)"
  check_down

  # 2. A dead link (mpirun): the job ends within the communication timeout, naming the peer.
  up 2 --bandwidth 10gbit
  bash "$cluster" mpirun -np 2 "$halogen" train "$work/p2" "${common[@]}" --epochs 1000000 --checkpoint "$work/ck-link" \
    --checkpoint-every 20 --comm-timeout 5 >"$work/link.txt" 2>&1 &
  job=$!
  for _ in $(seq 1 300); do [ -f "$work/ck-link/last.h5" ] && break; sleep 0.1; done
  [ -f "$work/ck-link/last.h5" ] || fail "no checkpoint within 30 s (dead link case)"
  start=$SECONDS
  bash "$cluster" shape node2 --down 2>/dev/null
  bash "$cluster" status | grep -q "node2 .*link DOWN" || fail "status does not show node2's link down"
  for _ in $(seq 1 450); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then fail "mpirun still runs 45 s after node2's link went down"; fi
  wait "$job" && fail "the job with a dead link exited 0"
  echo "cluster test: dead link: mpirun ended after $((SECONDS - start)) s"
  grep -E "error: communication timeout on node1: .* with rank 1 \(node2\) did not complete within 5 s" "$work/link.txt" ||
    fail "no timeout line naming rank 1 (node2)"
  "$halogen" predict "$work/p1" --checkpoint "$work/ck-link" -o "$work/link-pred.h5" >/dev/null 2>&1 ||
    fail "the checkpoint of the dead-link job is not readable"
  check_down

  # 3. A stopped rank on one host (SIGSTOP): the job ends within the timeout.
  timeout 60 mpirun --oversubscribe --bind-to none -np 2 "$halogen" train "$work/p2" "${common[@]}" --epochs 1000000 \
    --checkpoint "$work/ck-stop" --checkpoint-every 20 --comm-timeout 4 >"$work/stop.txt" 2>&1 &
  job=$!
  for _ in $(seq 1 300); do [ -f "$work/ck-stop/last.h5" ] && break; sleep 0.1; done
  ranks=$(ranks_running | sort -n)
  [ "$(wc -w <<<"$ranks")" = 2 ] || fail "expected 2 rank processes, found: $ranks"
  start=$SECONDS
  kill -STOP "$(tail -n 1 <<<"$ranks")"
  wait "$job"
  status=$?
  [ "$status" -ne 0 ] && [ "$status" -ne 124 ] || fail "a stopped rank: exit $status (124: still hung after 60 s)"
  [ $((SECONDS - start)) -le 20 ] || fail "a stopped rank: the job took $((SECONDS - start)) s to end"
  grep -q "error: communication timeout on .* did not complete within 4 s" "$work/stop.txt" ||
    fail "no timeout line for the stopped rank"
  echo "cluster test: stopped rank: the job ended after $((SECONDS - start)) s"

  # 4. A slow host (CPU quota 0.2): the run completes and the metrics name rank 1 (node2) the straggler.
  #    Epochs of ~100 ms of compute per rank: a quota is enforced per 100 ms period, so with much shorter epochs
  #    the throttled time lands anywhere (in evaluation, in waits) rather than in the slow rank's compute.
  "$halogen" generate sbm --nodes 20000 --classes 4 --avg-degree 16 --features 128 --seed 3 -o "$work/big.h5" >/dev/null
  "$halogen" partition "$work/big.h5" -k 2 -o "$work/big.p2" >/dev/null
  up 2 --bandwidth 10gbit
  bash "$cluster" shape node2 --cpus 0.2 2>/dev/null
  timeout 180 bash "$cluster" mpirun -np 2 "$halogen" train "$work/big.p2" --hidden 512 --seed 4 --quiet --epochs 12 \
    --metrics "$work/slow.jsonl" >"$work/slow.txt" 2>&1 || fail "the run with a slow host failed"
  python3 - "$work/slow.jsonl" <<'PY' || fail "the straggler is not in the metrics"
import json, sys
records = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
epochs = [r for r in records if "epoch" in r and not r.get("final")]
assert len(epochs) == 12, len(epochs)
slow = [r["slowest_rank"] for r in epochs]
# Most epochs, not all: the quota is enforced per 100 ms period, so in some epochs the throttled time lands
# outside the slow rank's compute (evaluation, a wait) and either rank may come out slowest.
assert slow[1:].count(1) >= 7, f"slowest_rank per epoch: {slow}"
ratios = sorted(r["compute_ms_max"] / max(r["compute_ms_min"], 1e-9) for r in epochs[1:])
median = ratios[len(ratios) // 2]
assert median > 1.5, f"compute_ms_max / compute_ms_min per epoch {ratios}: expected the 0.2-CPU host far slower"
print(f"cluster test: slow host: slowest_rank {slow}, compute max/min median {median:.1f}")
PY
  check_down
  ;;

elastic)
  cd "$work" || exit 1
  up 2 --bandwidth 10gbit
  # 2 hosts -> 1 rank: 10 epochs on 2 hosts, the rest on 1 rank; equal to the straight 2-host run.
  timeout 120 bash "$cluster" mpirun -np 2 "$halogen" train "$work/p2" "${common[@]}" --epochs 20 \
    --metrics "$work/straight2.jsonl" >/dev/null 2>"$work/straight2.txt" || fail "straight 2-host run"
  timeout 120 bash "$cluster" mpirun -np 2 "$halogen" train "$work/p2" "${common[@]}" --epochs 10 \
    --checkpoint "$work/ck21" >/dev/null 2>"$work/first21.txt" || fail "first half on 2 hosts"
  timeout 120 "$halogen" train "$work/p1" "${common[@]}" --epochs 20 --checkpoint "$work/ck21" --resume \
    --metrics "$work/resumed21.jsonl" >"$work/resumed21.txt" 2>&1 || fail "resume on 1 rank"
  grep -q "another partition of this graph" "$work/resumed21.txt" || fail "the other partition is not reported"
  [ "$(grep -c "another partition" "$work/resumed21.txt")" = 1 ] || fail "the other partition is reported twice"
  compare "$work/straight2.jsonl" "$work/resumed21.jsonl" --rel 1e-4 --from-epoch 11 --min-epochs 10 ||
    fail "2 hosts -> 1 rank differs from the straight run"
  sed -n 2p "$work/resumed21.jsonl" | grep -q '"epoch":11' || fail "2 -> 1 did not continue at epoch 11"
  # 1 rank -> 2 hosts.
  timeout 120 "$halogen" train "$work/p1" "${common[@]}" --epochs 20 --metrics "$work/straight1.jsonl" >/dev/null 2>&1 ||
    fail "straight 1-rank run"
  timeout 120 "$halogen" train "$work/p1" "${common[@]}" --epochs 10 --checkpoint "$work/ck12" >/dev/null 2>&1 ||
    fail "first half on 1 rank"
  timeout 120 bash "$cluster" mpirun -np 2 "$halogen" train "$work/p2" "${common[@]}" --epochs 20 \
    --checkpoint "$work/ck12" --resume --metrics "$work/resumed12.jsonl" >"$work/resumed12.txt" 2>&1 ||
    fail "resume on 2 hosts"
  compare "$work/straight1.jsonl" "$work/resumed12.jsonl" --rel 1e-4 --from-epoch 11 --min-epochs 10 ||
    fail "1 rank -> 2 hosts differs from the straight run"
  # A partition of another graph is refused.
  "$halogen" generate sbm --nodes 3000 --classes 4 --avg-degree 10 --features 32 --seed 9 -o "$work/other.h5" >/dev/null
  "$halogen" partition "$work/other.h5" -k 2 -o "$work/other.p2" >/dev/null
  if timeout 120 bash "$cluster" mpirun -np 2 "$halogen" train "$work/other.p2" "${common[@]}" --epochs 30 \
    --checkpoint "$work/ck12" --resume >/dev/null 2>"$work/other.txt"; then
    fail "a checkpoint resumed on a partition of another graph"
  fi
  grep -qi "checksum" "$work/other.txt" || fail "the refusal does not name the checksum: $(cat "$work/other.txt")"
  echo "cluster test: elastic resume 2 -> 1 and 1 -> 2 match the straight runs; another graph is refused"
  check_down
  ;;
*) fail "unknown mode $mode" ;;
esac
echo "cluster test ($mode): passed"
