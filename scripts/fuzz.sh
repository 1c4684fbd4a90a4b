#!/usr/bin/env bash
# Fuzz the readers of untrusted input for SECONDS in total (default 60), shared equally by the libFuzzer targets
# of tests/fuzz (text reader, Matrix Market, SNAP, OGB csv, npz, pickle), each seeded from tests/io/corpus,
# tests/io/npz_* and the Planetoid pickles (tests/io/planetoid_fixture.py, ../shared/data/planetoid when there). Builds the `fuzz` preset (clang, ASan+UBSan+libFuzzer) first. Prints the executions of each
# target; exits non-zero when a target crashes, leaks past -rss_limit_mb, or hangs past -timeout (the input is
# kept in build/fuzz/artifacts/). Inputs found to add coverage stay in build/fuzz/corpus/ for the next run.
#   scripts/fuzz.sh 60
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
targets=(text_reader mtx snap ogb_csv npz pickle)
mkdir -p build/fuzz
# The build's output is shown only when it fails (a silent `set -e` exit would hide why).
if ! { [ -f build/fuzz/build.ninja ] || cmake --preset fuzz; } >build/fuzz/configure.log 2>&1; then
  tail -40 build/fuzz/configure.log; echo "fuzz: configuring the fuzz preset failed"; exit 1
fi
if ! cmake --build --preset fuzz >build/fuzz/build.log 2>&1; then
  grep -E "error|undefined|FAILED" build/fuzz/build.log | head -40; echo "fuzz: building the fuzz targets failed"; exit 1
fi
share=$((seconds / ${#targets[@]}))
[ "$share" -ge 1 ] || share=1
corpus=tests/io/corpus
seeds=build/fuzz/seeds
rm -rf "$seeds" && mkdir -p build/fuzz/artifacts
for target in "${targets[@]}"; do mkdir -p "$seeds/$target" "build/fuzz/corpus/$target"; done
# Seeds: every input of the malformed-input corpus, plus the valid npz archives of the io tests.
n=0
for f in "$corpus"/mtx/*/in.mtx "$corpus"/snap*/*/in.*; do
  n=$((n + 1))
  case "$f" in *.mtx) cp "$f" "$seeds/mtx/$n" ;; *) cp "$f" "$seeds/snap/$n" ;; esac
  cp "$f" "$seeds/text_reader/$n"
done
for d in "$corpus"/ogb_csv/*/in; do
  [ -f "$d/raw/edge.csv" ] || continue
  out="$seeds/ogb_csv/$(basename "$(dirname "$d")")"
  first=1
  for part in raw/num-node-list.csv raw/num-edge-list.csv raw/edge.csv raw/node-feat.csv raw/node-label.csv \
              split/s/train.csv split/s/valid.csv split/s/test.csv; do
    [ $first -eq 1 ] || printf '\n==\n' >>"$out"
    first=0
    [ -f "$d/$part" ] && head -c 4000 "$d/$part" >>"$out"
  done
done
for f in "$corpus"/ogb_npz/*/in/raw/data.npz tests/io/npz_*/raw/*.npz; do
  n=$((n + 1))
  cp "$f" "$seeds/npz/$n"
done
# Pickles: the tiny Planetoid set in protocols 0, 2 and 4 (needs numpy/scipy), and the published small parts.
python3 - "$seeds/pickle" <<'PY' || true
import sys
sys.dont_write_bytecode = True
sys.path.insert(0, "tests/io")
import planetoid_fixture
for protocol in (0, 2, 4):
    planetoid_fixture.write(f"{sys.argv[1]}/p{protocol}", protocol=protocol, defaultdict=protocol == 2)
PY
for f in "$seeds"/pickle/p*/ind.* ../shared/data/planetoid/ind.*.{y,ty,graph}; do
  [ -f "$f" ] || continue
  n=$((n + 1))
  cp "$f" "$seeds/pickle/$n"
done
rm -rf "$seeds"/pickle/p*

status=0
for target in "${targets[@]}"; do
  log="build/fuzz/$target.log"
  if ASAN_OPTIONS=detect_leaks=1 "build/fuzz/bin/fuzz_$target" -max_total_time="$share" -rss_limit_mb=2048 -timeout=10 \
      -max_len=8192 -print_final_stats=1 -artifact_prefix="build/fuzz/artifacts/$target-" \
      "build/fuzz/corpus/$target" "$seeds/$target" >"$log" 2>&1; then
    result=ok
  else
    result="FAILED (see $log and build/fuzz/artifacts/)"
    status=1
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
  printf 'fuzz %-12s %4d s  %10s executions  %s\n' "$target" "$share" "$runs" "$result"
done
exit $status
