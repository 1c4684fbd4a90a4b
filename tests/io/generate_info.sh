#!/usr/bin/env bash
# `halogen generate` + `halogen info`: same seed gives byte-identical datasets, info reports the sizes, and
# `info --check` rejects a corrupted file with exit 2.
set -u
bin="${HALOGEN_BIN:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$bin" generate sbm --nodes 3000 --classes 3 --avg-degree 6 --features 5 --seed 9 -o "$work/a.h5" >/dev/null || fail "generate sbm"
OMP_NUM_THREADS=2 "$bin" generate sbm --nodes 3000 --classes 3 --avg-degree 6 --features 5 --seed 9 -o "$work/b.h5" >/dev/null ||
  fail "generate sbm (2 threads)"
info=$("$bin" info --check "$work/a.h5") || fail "info --check on a generated file"
grep -q "^nodes     3000$" <<<"$info" || fail "info lacks the node count: $info"
grep -q "^features  5$" <<<"$info" || fail "info lacks the feature count: $info"
grep -q "^classes   3 " <<<"$info" || fail "info lacks the class count: $info"
grep -q "/node/feat .*float32 .*\[3000, 5\]" <<<"$info" || fail "info lacks the feature dataset: $info"
"$bin" info "$work/b.h5" | grep -v "^file" >"$work/b.txt"
grep -v "^file" <<<"$info" | grep -v "^check" >"$work/a.txt"
cmp -s "$work/a.txt" "$work/b.txt" || fail "same seed, different thread count: different graphs"
"$bin" generate rmat --scale 10 --edge-factor 4 --classes 2 --features 3 -o "$work/r.h5" >/dev/null || fail "generate rmat"
"$bin" info --check "$work/r.h5" | grep -q "^nodes     1024$" || fail "rmat node count"
out=$("$bin" generate sbm --nodes 10 --homophily 2 -o "$work/c.h5" 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "bad --homophily exit $rc: $out"
[ ! -e "$work/c.h5" ] || fail "bad --homophily left a file"
printf 'not hdf5' >"$work/junk.h5"
out=$("$bin" info "$work/junk.h5" 2>&1); rc=$?
[ "$rc" -eq 2 ] || fail "info on a junk file: exit $rc ($out)"
echo "generate/info: all checks passed"
