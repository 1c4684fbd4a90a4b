#!/usr/bin/env bash
# Bad-input corpus: each broken input is rejected by `halogen convert` with exit 2, one line naming the file,
# the line and what is wrong, no crash, and no output (or temporary) file left behind.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A valid 4-node OGB directory; each case copies it and breaks one file.
make_ogb() {
  local dir="$1"
  mkdir -p "$dir/raw" "$dir/split/s"
  printf '4\n' | gzip >"$dir/raw/num-node-list.csv.gz"
  printf '3\n' | gzip >"$dir/raw/num-edge-list.csv.gz"
  printf '0,1\n1,2\n2,3\n' | gzip >"$dir/raw/edge.csv.gz"
  printf '0.5,1\n1,2\n2,3\n3,4\n' | gzip >"$dir/raw/node-feat.csv.gz"
  printf '0\n1\nnan\n1\n' | gzip >"$dir/raw/node-label.csv.gz"
  printf '0\n1\n' | gzip >"$dir/split/s/train.csv.gz"
  printf '2\n' | gzip >"$dir/split/s/valid.csv.gz"
  printf '3\n' | gzip >"$dir/split/s/test.csv.gz"
}

# expect_rejected NAME EXPECTED-SUBSTRING halogen-convert-args...  (output goes to $work/out/NAME.h5)
expect_rejected() {
  local name="$1" wanted="$2"
  shift 2
  rm -rf "$work/out" && mkdir -p "$work/out"
  local out rc
  out=$("$bin" convert "$@" -o "$work/out/$name.h5" 2>&1)
  rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exit $rc, expected 2 (output: $out)"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$name: more than one line: $out"
  grep -qF -- "$wanted" <<<"$out" || fail "$name: message '$out' lacks '$wanted'"
  [ -z "$(ls -A "$work/out")" ] || fail "$name: left files behind: $(ls -A "$work/out")"
  echo "ok  $name: $out"
}

make_ogb "$work/good"
"$bin" convert --format ogb "$work/good" -o "$work/good.h5" >/dev/null || fail "the valid base case does not convert"

case_dir() { rm -rf "$work/$1" && cp -r "$work/good" "$work/$1" && echo "$work/$1"; }

d=$(case_dir truncated)
seq 1 20000 | awk '{print ($1 % 3) "," (($1 + 1) % 4)}' | gzip >"$d/big.gz"
head -c $(($(wc -c <"$d/big.gz") / 2)) "$d/big.gz" >"$d/raw/edge.csv.gz" && rm "$d/big.gz"
printf '20000\n' | gzip >"$d/raw/num-edge-list.csv.gz"
expect_rejected truncated_gzip "raw/edge.csv.gz: corrupt or truncated gzip data (unexpected end of file)" --format ogb "$d"

d=$(case_dir columns)
printf '0,1\n1,2,3\n2,3\n' | gzip >"$d/raw/edge.csv.gz"
expect_rejected wrong_column_count "raw/edge.csv.gz: line 2: expected 2 columns (src,dst), found 3" --format ogb "$d"

d=$(case_dir featcols)
printf '0.5,1\n1\n2,3\n3,4\n' | gzip >"$d/raw/node-feat.csv.gz"
expect_rejected feature_column_count "raw/node-feat.csv.gz: line 2: expected 2 columns (as on line 1), found 1" --format ogb "$d"

d=$(case_dir token)
printf '0,1\n1,x2\n2,3\n' | gzip >"$d/raw/edge.csv.gz"
expect_rejected non_numeric_token "raw/edge.csv.gz: line 2: column 2: 'x2' is not an integer" --format ogb "$d"

d=$(case_dir feattoken)
printf '0.5,1\n1,2\n2,abc\n3,4\n' | gzip >"$d/raw/node-feat.csv.gz"
expect_rejected non_numeric_feature "raw/node-feat.csv.gz: line 3: column 2: 'abc' is not a number" --format ogb "$d"

d=$(case_dir big)
printf '0,1\n1,2\n2,4\n' | gzip >"$d/raw/edge.csv.gz"
expect_rejected id_at_least_n "raw/edge.csv.gz: line 3: node id 4 out of range [0, 4)" --format ogb "$d"

d=$(case_dir negative)
printf '0,1\n-1,2\n2,3\n' | gzip >"$d/raw/edge.csv.gz"
expect_rejected negative_id "raw/edge.csv.gz: line 2: node id -1 out of range [0, 4)" --format ogb "$d"

d=$(case_dir label)
printf '0\n1\n-3\n1\n' | gzip >"$d/raw/node-label.csv.gz"
expect_rejected label_out_of_range "raw/node-label.csv.gz: line 3: label -3 out of range" --format ogb "$d"

d=$(case_dir dupsplit)
printf '0\n1\n0\n' | gzip >"$d/split/s/train.csv.gz"
expect_rejected duplicate_split_id "split/s/train.csv.gz: line 3: node id 0 appears twice" --format ogb "$d"

d=$(case_dir splitrange)
printf '7\n' | gzip >"$d/split/s/test.csv.gz"
expect_rejected split_id_out_of_range "split/s/test.csv.gz: line 1: node id 7 out of range [0, 4)" --format ogb "$d"

d=$(case_dir count)
printf '4\n' | gzip >"$d/raw/num-edge-list.csv.gz"
expect_rejected edge_count_mismatch "raw/edge.csv.gz: 3 edges, but num-edge-list says 4" --format ogb "$d"

d=$(case_dir missing)
rm "$d/raw/edge.csv.gz"
expect_rejected missing_file "raw/edge.csv.gz: no such file" --format ogb "$d"

printf '%%%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n0 2\n' >"$work/zero.mtx"
expect_rejected matrix_market_0_based "zero.mtx: line 4: index 0 out of range [1, 3] (Matrix Market indices are 1-based)" "$work/zero.mtx"

printf '%%%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2\n' >"$work/cols.mtx"
expect_rejected matrix_market_columns "cols.mtx: line 3: expected 3 columns for a real matrix, found 2" "$work/cols.mtx"

printf '# c\n1 2\n3 -4\n' >"$work/neg.txt"
expect_rejected snap_negative_id "neg.txt: line 3: negative node id -4" --format snap "$work/neg.txt"

printf '1 2\n3\n' >"$work/one.txt"
expect_rejected snap_column_count "one.txt: line 2: expected 2 columns" --format snap "$work/one.txt"

mkdir -p "$work/npz/raw"
head -c 100 "$HALOGEN_SOURCE_DIR/tests/io/npz_deflated/raw/data.npz" >"$work/npz/raw/data.npz"
expect_rejected truncated_npz "raw/data.npz: not a zip/npz archive (no end of central directory; truncated?)" --format npz "$work/npz"

# An existing output survives a failed conversion untouched.
cp "$work/good.h5" "$work/keep.h5"
"$bin" convert --format ogb "$work/negative" -o "$work/keep.h5" >/dev/null 2>&1
cmp -s "$work/good.h5" "$work/keep.h5" || fail "a failed conversion changed an existing output file"
echo "bad inputs: all rejected correctly"
