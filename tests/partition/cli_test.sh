#!/usr/bin/env bash
# End to end: generate -> partition (each method) -> info --check; METIS beats random by >= 5x in halo rows
# on an SBM with clear communities at P=8; every bad input is one line on stderr with exit 2.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" generate sbm --nodes 3000 --classes 6 --homophily 0.95 --features 4 -o "$work/g.h5" >/dev/null ||
  fail "generate sbm exited $?"

for method in metis random contiguous; do
  out=$("$bin" partition "$work/g.h5" --parts 6 -o "$work/p_$method" --method "$method" 2>&1) ||
    fail "partition --method $method exited $?: $out"
  grep -q "halo rows total" <<<"$out" || fail "partition did not print halo statistics: $out"
  for f in meta.json assignment.h5 part-00000.h5 part-00005.h5; do
    [ -f "$work/p_$method/$f" ] || fail "--method $method did not write $f"
  done
  [ -f "$work/p_$method/part-00006.h5" ] && fail "--method $method wrote a 7th shard"
  check=$("$bin" info "$work/p_$method" --check 2>&1) || fail "info --check on $method exited $?: $check"
  grep -q "check: OK" <<<"$check" || fail "info --check did not report OK: $check"
done

# Options that change METIS's input: multi-constraint, part weights, volume objective, P=1.
"$bin" partition "$work/g.h5" --parts 4 -o "$work/p_train" --balance train --part-weights 1,1,2,2 \
  --objective vol --imbalance 1.05 --seed 7 >/dev/null || fail "partition with --balance train exited $?"
"$bin" info "$work/p_train" --check >/dev/null || fail "info --check on --balance train failed"
"$bin" partition "$work/g.h5" --parts 4 -o "$work/p_tight" --imbalance 1.0 >/dev/null ||
  fail "partition --imbalance 1.0 (the tightest balance METIS accepts) exited $?"
"$bin" partition "$work/g.h5" --parts 1 -o "$work/p_one" >/dev/null || fail "partition --parts 1 exited $?"
"$bin" info "$work/p_one" --check >/dev/null || fail "info --check on P=1 failed"

# METIS determinism across processes: same seed, same assignment file contents.
"$bin" partition "$work/g.h5" --parts 6 -o "$work/p_metis2" --seed 1 >/dev/null || fail "second metis run exited $?"
same_part() {  # HDF5 files carry object timestamps, so compare the datasets, not the bytes
  python3 -c "import h5py,sys,numpy; a,b=(h5py.File(f,'r')['/part'][:] for f in sys.argv[1:]); sys.exit(0 if numpy.array_equal(a,b) else 1)" "$@"
}
same_part "$work/p_metis/assignment.h5" "$work/p_metis2/assignment.h5" || fail "METIS differs between runs with seed 1"

# Quality: total halo rows of METIS at least 5x smaller than random's (P=6 here, communities = classes).
halo() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['statistics']['halo_rows_total'])" "$1/meta.json"; }
metis=$(halo "$work/p_metis"); random=$(halo "$work/p_random")
[ $((metis * 5)) -le "$random" ] || fail "METIS halo $metis is not 5x smaller than random's $random"

expect_user_error() {  # expect_user_error "what" args...
  local what="$1"; shift
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  [ "$rc" -eq 2 ] || fail "$what: exited $rc, expected 2 (output: $out)"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$what: more than one line: $out"
  grep -q "error" <<<"$out" || fail "$what: no 'error' in: $out"
}
expect_user_error "P < 1" partition "$work/g.h5" --parts 0 -o "$work/bad1"
expect_user_error "P > N" partition "$work/g.h5" --parts 3001 -o "$work/bad2"
echo "not hdf5" >"$work/bad.h5"
expect_user_error "invalid graph file" partition "$work/bad.h5" --parts 2 -o "$work/bad3"
expect_user_error "missing graph file" partition "$work/nosuch.h5" --parts 2 -o "$work/bad4"
expect_user_error "non-empty output directory" partition "$work/g.h5" --parts 2 -o "$work/p_metis"
expect_user_error "unknown method" partition "$work/g.h5" --parts 2 -o "$work/bad5" --method kahip
expect_user_error "bad part weights" partition "$work/g.h5" --parts 2 -o "$work/bad6" --part-weights 1,2,3
for d in bad1 bad2 bad3 bad4 bad5 bad6; do [ -e "$work/$d" ] && fail "a rejected run left $d behind"; done

# --force replaces the partition (fewer parts: no stale shard of the old one is left).
"$bin" partition "$work/g.h5" --parts 2 -o "$work/p_metis" --force >/dev/null || fail "--force exited $?"
[ -f "$work/p_metis/part-00002.h5" ] && fail "--force left a stale shard"
"$bin" info "$work/p_metis" --check >/dev/null || fail "info --check after --force failed"

# info --check notices a changed graph file.
"$bin" generate sbm --nodes 3000 --classes 6 --homophily 0.95 --features 4 --seed 2 -o "$work/g.h5" >/dev/null
out=$("$bin" info "$work/p_metis" --check 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "info --check on a changed graph file exited $rc, expected 2: $out"
grep -q "error: .*changed since it was partitioned" <<<"$out" || fail "info --check did not say why: $out"

# A partition made before XXH3 fingerprints (meta.json checksum "fnv1a64:..."): still read, and --check says
# to partition again rather than claim the graph changed.
sed -i 's/"checksum": "xxh3-64:[0-9a-f]*"/"checksum": "fnv1a64:0123456789abcdef"/' "$work/p_metis/meta.json"
grep -q '"fnv1a64:0123456789abcdef"' "$work/p_metis/meta.json" || fail "meta.json has no xxh3-64 checksum to replace"
"$bin" info "$work/p_metis" >/dev/null || fail "info on a partition with an fnv1a64 checksum failed"
out=$("$bin" info "$work/p_metis" --check 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "info --check with an fnv1a64 checksum exited $rc, expected 2: $out"
grep -q "error: .*meta.json: graph.checksum fnv1a64:0123456789abcdef was recorded by an earlier Halogen.*partition the graph again" <<<"$out" ||
  fail "info --check with an fnv1a64 checksum: $out"
echo "partition cli: all checks passed"
