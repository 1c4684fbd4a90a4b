#!/usr/bin/env bash
# Signals are not bad input (issue 31, finding 5): SIGTERM/SIGINT/SIGHUP to `partition` (also while METIS
# runs: its GKlib used to catch SIGTERM and the job said "METIS_PartGraphKway failed (status -4) on this graph"),
# `generate` and `convert` end the job with exit 128 + signal and one line `halogen CMD: interrupted by SIG
# during PHASE`; nothing is left half-written: no output (or the old one, byte-identical, under --force), no
# temporary, no lock file.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
cd "$work" || exit 1
leftovers() { find . -maxdepth 2 \( -name '*.tmp.*' -o -name '*.halogen.lock' \) | head -3; }
num() { case $1 in TERM) echo 15 ;; INT) echo 2 ;; HUP) echo 1 ;; esac; }

# interrupt NAME SIGNAL DELAY PHASES CMD...: runs CMD, sends SIGNAL after DELAY s; checks status, the one line
# (its phase one of PHASES, a |-separated list) and that nothing is left.
interrupt() {
  local name="$1" sig="$2" delay="$3" phases="$4"
  shift 4
  "$@" >out.txt 2>err.txt &
  local pid=$!
  sleep "$delay"
  kill -"$sig" "$pid" 2>/dev/null || fail "$name: the job ended before SIG$sig was sent (make the input larger)"
  wait "$pid"
  local rc=$?
  [ "$rc" -eq $((128 + $(num "$sig"))) ] || fail "$name: exit $rc, expected $((128 + $(num "$sig"))): $(cat err.txt)"
  [ "$(wc -l <err.txt)" -eq 1 ] || fail "$name: not one line on stderr: $(cat err.txt)"
  grep -Eq "^halogen [a-z]+: interrupted by SIG$sig during ($phases)\$" err.txt ||
    fail "$name: line: $(cat err.txt)"
  grep -qi "metis\|error" err.txt && fail "$name: reported as an error: $(cat err.txt)"
  [ -z "$(leftovers)" ] || fail "$name: left behind: $(leftovers)"
  echo "ok  $name: $(cat err.txt)"
}

"$bin" generate sbm --nodes 400000 --classes 8 --avg-degree 20 --features 8 --seed 1 -o g.h5 >/dev/null ||
  fail "generate g.h5"
# METIS runs from about 0.2 s to 3 s of a 3.6 s partition here (release build); the sanitizer build is slower.
interrupt "partition, SIGTERM in METIS" TERM 1.2 "partition" "$bin" partition g.h5 -k 8 -o p8
[ ! -e p8 ] || fail "an interrupted partition left p8"
interrupt "partition, SIGINT" INT 0.8 "read graph|partition" "$bin" partition g.h5 -k 8 -o p8
interrupt "partition, SIGHUP" HUP 1.5 "partition|halo plan|write shards" "$bin" partition g.h5 -k 8 -o p8
[ ! -e p8 ] || fail "an interrupted partition left p8"
# Over an old partition with --force: the old one stays, byte-identical.
"$bin" partition g.h5 -k 2 --method contiguous -o p8 >/dev/null || fail "partition -k 2"
before=$(cat p8/* | md5sum)
interrupt "partition --force, SIGTERM in METIS" TERM 1.2 "partition" "$bin" partition g.h5 -k 8 -o p8 --force
[ "$(cat p8/* | md5sum)" = "$before" ] || fail "an interrupted partition --force changed the old partition"
# generate and convert
interrupt "generate, SIGTERM" TERM 0.3 "generate|write big.h5" \
  "$bin" generate rmat --scale 21 --edge-factor 16 --features 16 --seed 1 -o big.h5
[ ! -e big.h5 ] || fail "an interrupted generate left big.h5"
awk 'BEGIN { srand(3); for (i = 0; i < 3000000; i++) printf "%d %d\n", int(rand() * 500000), int(rand() * 500000) }' \
  >edges.txt
interrupt "convert, SIGTERM" TERM 0.5 "convert edges.txt|write e.h5" "$bin" convert edges.txt -o e.h5
[ ! -e e.h5 ] || fail "an interrupted convert left e.h5"
# --method ptscotch on 2 processes, each sending itself SIGTERM as a phase begins (HALOGEN_FAULT_SIGNAL_AT, as
# scancel signals every process): one line for the job, process 0's, and no partition directory.
if command -v mpirun >/dev/null && "$bin" partition g.h5 -k 1 --method ptscotch -o probe >/dev/null 2>&1; then
  for phase in "read graph" "partition" "write shards"; do
    rm -rf p2
    rc=0
    HALOGEN_FAULT_SIGNAL_AT="$phase" timeout 120 mpirun --oversubscribe --bind-to none -np 2 -x HALOGEN_FAULT_SIGNAL_AT \
      "$bin" partition g.h5 -k 2 --method ptscotch -o p2 >/dev/null 2>err.txt || rc=$?
    [ "$rc" != 0 ] && [ "$rc" != 124 ] || fail "ptscotch, SIGTERM as '$phase' begins: exit $rc"
    [ "$(grep -c 'halogen' err.txt)" = 1 ] || fail "ptscotch, '$phase': not one line: $(cat err.txt)"
    grep -q "^\[0/2\] halogen partition: interrupted by SIGTERM during $phase" err.txt ||
      fail "ptscotch, '$phase': $(cat err.txt)"
    [ ! -e p2 ] || fail "ptscotch, '$phase': left p2 ($(ls -A p2))"
    echo "ok  ptscotch, SIGTERM as '$phase' begins: $(grep halogen err.txt)"
  done
fi
echo "interrupted jobs: all checks passed"
