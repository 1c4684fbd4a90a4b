#!/usr/bin/env bash
# train --trace: a Chrome/Perfetto trace of every rank, merged by rank 0. Two ranks: one process per rank named
# with its host, the five lanes, spans of spmm, gemm, halo (in flight and post/wait) and allreduce for every
# trained epoch, each inside the run's time span; the halo of an overlapped product is in flight while that
# rank's spmm runs. A trace path in a missing directory is one error before epoch 1; --device cuda is refused
# where the build has CUDA (tested by its message only when a GPU is present).
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 3000 --classes 4 --features 32 --avg-degree 10 --seed 5 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 -o "$WORK/p2" >/dev/null
timeout 120 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" --epochs 4 --hidden 16 --trace "$WORK/t.json" \
  --quiet >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "training with --trace"; }
grep -q "wrote trace $WORK/t.json" "$WORK/out" || fail "no 'wrote trace' line: $(cat "$WORK/out")"
python3 - "$WORK/t.json" <<'PY' || fail "trace content"
import json, socket, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"]
names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
host = socket.gethostname()
assert names == {0: f"rank 0 ({host})", 1: f"rank 1 ({host})"}, names
lanes = sorted((e["pid"], e["tid"], e["args"]["name"]) for e in events if e.get("ph") == "M" and e["name"] == "thread_name")
assert [l[2] for l in lanes if l[0] == 0] == ["compute", "halo", "halo wait", "allreduce", "allreduce wait"], lanes
spans = [e for e in events if e.get("ph") == "X"]
for rank in (0, 1):
    for epoch in range(1, 5):
        got = {e["name"] for e in spans if e["pid"] == rank and e["args"]["epoch"] == epoch}
        want = {"spmm", "gemm", "halo in flight", "halo post/wait", "allreduce in flight"}
        assert want <= got, (rank, epoch, sorted(got))
assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
# Overlap: every rank has an spmm span inside one of its halo-in-flight spans.
for rank in (0, 1):
    flights = [(e["ts"], e["ts"] + e["dur"]) for e in spans if e["pid"] == rank and e["name"] == "halo in flight"]
    inside = [e for e in spans if e["pid"] == rank and e["name"] == "spmm"
              and any(a <= e["ts"] and e["ts"] + e["dur"] <= b for a, b in flights)]
    assert inside, f"rank {rank}: no spmm while a halo exchange is in flight"
assert t["otherData"]["spans_dropped_max_per_rank"] == 0
print(f"trace: {len(spans)} spans, ranks {sorted(names)}")
PY
if timeout 60 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" --epochs 1 --trace "$WORK/missing/t.json" --quiet \
  2>"$WORK/err" >/dev/null; then
  fail "--trace into a missing directory succeeded"
fi
grep -q "missing" "$WORK/err" || fail "unclear error for a missing trace directory: $(cat "$WORK/err")"
echo "trace: OK"
