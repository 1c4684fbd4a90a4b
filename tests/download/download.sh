#!/usr/bin/env bash
# `halogen download` against a local HTTP server (tests/download/http_server.py on 127.0.0.1, started here, gone
# when the test ends): no internet is needed. Fixtures are made here in each published layout. Cases ($1):
#   ogb        ogbn-arxiv (OGB csv zip) and ogbn-papers100M (OGB npz zip) through --mirror end to end: the graph
#              file is byte-identical to `convert` of the same unpacked directory; a second run fetches nothing;
#              --list names every dataset; trust on first use records the SHA-256 and refuses a changed file
#   resume     the server closes the connection at 50%: the transfer resumes (Range) to a verified file; a server
#              without ranges makes it start over; a killed download resumes from its partial file
#   bad_hash   a wrong SHA-256 (--checksums): one line naming the file and containing SHA-256, exit 2, no graph
#              file written, an earlier graph file untouched, the bad download deleted
#   http_error 500 twice then the file: retried to success; 404 for good: retried, then one line
#   full_disk  too little free space (a 512 KiB tmpfs): refused before any byte, one line; a write that fails mid-
#              transfer (ulimit -f): one line, the partial file kept, the next run resumes it
#   concurrent two downloads of one dataset at once: one waits for the other's lock, both succeed, the archive
#              is fetched once
#   formats    made-up fixtures in the Planetoid (cora), PGT JSON (chickenpox) and Reddit npz layouts through
#              --mirror with --checksums, each byte-identical to `convert` of the same files; with ../shared/data
#              also the real Cora and Chickenpox against the built-in SHA-256 table (Chickenpox from a file://
#              mirror, resumed from a partial file)
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
src="${HALOGEN_SOURCE_DIR:?HALOGEN_SOURCE_DIR not set}"
case_name="${1:?case}"
here="$src/tests/download"
if ! python3 -c 'import numpy' 2>/dev/null; then
  echo "skipped: python3 lacks numpy (scripts/install-deps.sh installs it)"; exit 77
fi
work=$(mktemp -d)
server_pid=""
trap '[ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null; wait 2>/dev/null; [ -n "${HALOGEN_TEST_KEEP:-}" ] || rm -rf "$work"' EXIT
cd "$work" || exit 1
fail() { echo "FAIL: $*"; exit 1; }

# serve DIR [server options]: starts the server on DIR; sets $base and $server_pid; requests go to $work/requests.
serve() {
  [ -n "$server_pid" ] && { kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; }
  rm -f "$work/port"
  : > "$work/requests"
  python3 "$here/http_server.py" --root "$1" --port-file "$work/port" --log "$work/requests" --lifetime 240 \
    "${@:2}" &
  server_pid=$!
  for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
  [ -s "$work/port" ] || fail "the test server did not start"
  base="http://127.0.0.1:$(cat "$work/port")"
}
# sums DIR FILE...: a SHA256SUMS file of FILEs in DIR, at $work/SUMS
sums() { (cd "$1" && sha256sum "${@:2}") > "$work/SUMS"; }
# one_line_error NAME PATTERN CMD...: exit 2 and a last stderr line matching PATTERN; the line is printed
one_line_error() {
  local name="$1" pattern="$2"; shift 2
  local rc
  "$@" >"$work/out" 2>"$work/err"; rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exited $rc, expected 2: $(cat "$work/err")"
  local last; last=$(tail -n 1 "$work/err")
  grep -q -- "$pattern" <<<"$last" || fail "$name: expected '$pattern' in the last line: $(cat "$work/err")"
  [ "$(grep -c '^halogen: error' "$work/err")" -eq 1 ] || fail "$name: not one error line: $(cat "$work/err")"
  echo "$name: $last"
}
dl() { "$bin" download "$@" --retry-wait 0.05; }

# An OGB csv dataset in arxiv's zip layout: arxiv/raw/*.csv.gz, arxiv/split/random/*.csv.gz.
make_arxiv() {
  mkdir -p "$work/fixture/make" "$work/site"
  python3 "$src/scripts/make_ogb_layout.py" "$work/fixture/make/arxiv" --nodes 3000 --edges 30000 --features 8 \
    --classes 5 --seed 3 >/dev/null || fail "make_ogb_layout.py failed"
  (cd "$work/fixture/make" && python3 -c "
import os, zipfile
with zipfile.ZipFile('$work/site/arxiv.zip', 'w', zipfile.ZIP_DEFLATED) as z:
    for root, _, files in os.walk('arxiv'):
        for f in sorted(files): z.write(os.path.join(root, f))
") || fail "zip failed"
  "$bin" convert "$work/fixture/make/arxiv" -o "$work/reference.h5" --name ogbn-arxiv >/dev/null \
    || fail "convert of the fixture failed"
}

case "$case_name" in
ogb)
  "$bin" download --list > list.txt || fail "--list failed"
  for name in ogbn-arxiv ogbn-products ogbn-papers100M reddit cora citeseer pubmed chickenpox pedalme \
      england-covid montevideo-bus twitter-tennis-rg17 twitter-tennis-uo17 wikimath windmill-small \
      windmill-medium windmill-large; do
    grep -q "^$name " list.txt || fail "--list lacks $name: $(cat list.txt)"
  done
  make_arxiv
  sums "$work/site" arxiv.zip
  serve "$work/site"
  dl ogbn-arxiv --mirror "$base/" --checksums SUMS --data-dir cache -o arxiv.h5 > log 2>&1 \
    || fail "download ogbn-arxiv failed: $(cat log)"
  cmp arxiv.h5 reference.h5 || fail "download's graph file differs from convert's"
  grep -q "SHA-256 verified" log || fail "no verification line: $(cat log)"
  [ -e cache/ogbn-arxiv/arxiv.zip ] && fail "the archive was kept without --keep-archive"
  [ -e cache/ogbn-arxiv/unpacked ] && fail "the unpacked files were left"
  [ -e cache/.partial ] && fail "cache/.partial was left"
  echo "ogbn-arxiv: byte-identical to convert ($(stat -c %s arxiv.h5) bytes)"
  dl ogbn-arxiv --mirror "$base/" --checksums SUMS --data-dir cache -o arxiv.h5 > log2 2>&1 || fail "rerun: $(cat log2)"
  grep -q "already converted" log2 || fail "the rerun did not say it was up to date: $(cat log2)"
  [ "$(grep -c '^REQ /arxiv.zip ' requests)" -eq 1 ] || fail "the rerun fetched again: $(cat requests)"
  # Trust on first use (no --checksums, no table hash for OGB): the first download records its SHA-256, a
  # later download of a changed file is refused.
  HALOGEN_DATA="$work/tofu" dl ogbn-arxiv --mirror "$base" -o tofu.h5 > log3 2>&1 || fail "tofu download: $(cat log3)"
  grep -q "trusting this first complete download" log3 || fail "no trust-on-first-use line: $(cat log3)"
  [ "$(grep -c 'trusting' log3)" -eq 1 ] || fail "more than one trust line: $(cat log3)"
  cmp tofu.h5 reference.h5 || fail "tofu graph differs"
  grep -q "$(cut -c1-64 SUMS)" tofu/ogbn-arxiv/verified.json || fail "verified.json lacks the hash"
  echo "extra" >> site/arxiv.zip
  rm tofu.h5
  one_line_error "changed after first use" "SHA-256" env HALOGEN_DATA="$work/tofu" "$bin" download ogbn-arxiv \
    --mirror "$base" -o tofu.h5 --retry-wait 0.05
  [ -e tofu.h5 ] && fail "a graph file was written from a changed archive"
  # ogbn-papers100M's binary layout (raw/data.npz, raw/node-label.npz), from the npz fixture.
  mkdir -p npz/papers100M-bin site2
  cp -r "$src/tests/io/npz_deflated/." npz/papers100M-bin/
  (cd npz && python3 -c "
import os, zipfile
with zipfile.ZipFile('$work/site2/papers100M-bin.zip', 'w', zipfile.ZIP_STORED) as z:
    for root, _, files in os.walk('papers100M-bin'):
        for f in sorted(files): z.write(os.path.join(root, f))
")
  "$bin" convert npz/papers100M-bin -o papers-ref.h5 --name ogbn-papers100M > /dev/null || fail "convert npz"
  sums site2 papers100M-bin.zip
  serve "$work/site2"
  dl ogbn-papers100M --mirror "$base" --checksums SUMS --data-dir cache -o papers.h5 --keep-archive > log4 2>&1 \
    || fail "download ogbn-papers100M: $(cat log4)"
  cmp papers.h5 papers-ref.h5 || fail "papers100M graph differs from convert's"
  [ -e cache/ogbn-papers100M/papers100M-bin.zip ] || fail "--keep-archive did not keep the archive"
  rm papers.h5
  dl ogbn-papers100M --mirror "$base" --checksums SUMS --data-dir cache -o papers.h5 > log5 2>&1 || fail "reconvert"
  [ "$(grep -c '^REQ /papers100M-bin.zip ' requests)" -eq 1 ] || fail "the kept archive was fetched again"
  cmp papers.h5 papers-ref.h5 || fail "reconverted papers100M differs"
  echo "ogbn-papers100M: byte-identical; a kept archive converts again without fetching"
  ;;
resume)
  make_arxiv
  sums "$work/site" arxiv.zip
  serve "$work/site" --cut arxiv.zip:0.5
  dl ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache -o arxiv.h5 > log 2>&1 || fail "resume: $(cat log)"
  grep -q "resuming at" log || fail "no resume: $(cat log)"
  grep -q "^REQ /arxiv.zip range=bytes=[1-9][0-9]*-$" requests || fail "no ranged request: $(cat requests)"
  cmp arxiv.h5 reference.h5 || fail "the resumed download's graph differs"
  echo "cut at 50%: $(grep -m1 'resuming at' log)"
  # A server without ranges: the second attempt starts over.
  serve "$work/site" --cut arxiv.zip:0.5 --no-range
  dl ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache2 -o arxiv2.h5 > log 2>&1 || fail "no-range: $(cat log)"
  grep -q "starting over" log || fail "no start-over line: $(cat log)"
  cmp arxiv2.h5 reference.h5 || fail "the no-range download's graph differs"
  # A killed download resumes from its partial file.
  size=$(stat -c %s site/arxiv.zip)
  serve "$work/site" --slow arxiv.zip:$((size / 3))
  "$bin" download ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache3 -o arxiv3.h5 > killed.log 2>&1 &
  pid=$!
  for _ in $(seq 100); do [ "$(stat -c %s cache3/.partial/ogbn-arxiv/arxiv.zip 2>/dev/null || echo 0)" -gt 0 ] && break; sleep 0.1; done
  sleep 0.5
  kill -TERM "$pid"; wait "$pid"; rc=$?
  [ "$rc" -eq 143 ] || fail "the killed download exited $rc, expected 143: $(cat killed.log)"
  grep -q "interrupted by SIGTERM during downloading" killed.log || fail "no interrupt line: $(cat killed.log)"
  kept=$(stat -c %s cache3/.partial/ogbn-arxiv/arxiv.zip 2>/dev/null || echo 0)
  [ "$kept" -gt 0 ] && [ "$kept" -lt "$size" ] || fail "the partial file holds $kept of $size bytes"
  serve "$work/site"
  dl ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache3 -o arxiv3.h5 > log 2>&1 || fail "after kill: $(cat log)"
  grep -q "waiting for another job" log && fail "the killed job still held the lock: $(cat log)"
  grep -q "resuming at" log || fail "the rerun after a kill did not resume: $(cat log)"
  cmp arxiv3.h5 reference.h5 || fail "the graph after a kill differs"
  echo "killed at $kept of $size bytes, resumed: $(grep -m1 "resuming at" log)"
  ;;
bad_hash)
  make_arxiv
  sums "$work/site" arxiv.zip
  serve "$work/site"
  dl ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache -o arxiv.h5 > log 2>&1 || fail "first: $(cat log)"
  cp arxiv.h5 before.h5
  sed -i -E 's/^0/Z/; s/^[0-9a-f]/0/; s/^Z/1/' SUMS  # a different hash: a first digit 0 becomes 1, any other 0
  one_line_error "wrong SHA-256" "arxiv.zip: SHA-256 .* does not match" "$bin" download ogbn-arxiv --mirror "$base" \
    --checksums SUMS --data-dir cache -o arxiv.h5
  cmp arxiv.h5 before.h5 || fail "a failed check changed the converted graph file"
  one_line_error "wrong SHA-256, new output" "SHA-256" "$bin" download ogbn-arxiv --mirror "$base" \
    --checksums SUMS --data-dir cache -o new.h5
  [ -e new.h5 ] && fail "a failed check wrote a graph file"
  [ -e cache/.partial/ogbn-arxiv/arxiv.zip ] && fail "the bad download was kept"
  ls -A cache/ogbn-arxiv | grep -v verified.json && fail "files left in the cache: $(ls -A cache/ogbn-arxiv)"
  # Archives that verify but are not what they claim: a member escaping the directory, a corrupt member.
  mkdir -p evil
  python3 - <<'PY' || fail "evil fixtures"
import zipfile
with zipfile.ZipFile("evil/arxiv.zip", "w") as z:
    z.writestr("arxiv/raw/edge.csv", "0,1\n")
    z.writestr("../escaped.txt", "outside\n")
data = bytearray(open("site/arxiv.zip", "rb").read())
data[200] ^= 0xFF  # inside the first member's compressed bytes
open("evil/corrupt.zip", "wb").write(bytes(data))
PY
  (cd evil && sha256sum arxiv.zip) > EVILSUMS
  serve "$work/evil"
  one_line_error "zip member outside the directory" "would be written outside" "$bin" download ogbn-arxiv \
    --mirror "$base" --checksums EVILSUMS --data-dir evilcache -o evil.h5
  [ -e evilcache/escaped.txt ] || [ -e evilcache/ogbn-arxiv/escaped.txt ] && fail "a member escaped"
  mv evil/corrupt.zip evil/arxiv.zip
  (cd evil && sha256sum arxiv.zip) > EVILSUMS
  one_line_error "corrupt zip member" "arxiv.zip: arxiv/" "$bin" download ogbn-arxiv --mirror "$base" \
    --checksums EVILSUMS --data-dir evilcache -o evil.h5
  [ -e evil.h5 ] && fail "a graph file was written from a corrupt archive"
  printf 'not a hash  arxiv.zip\n' > BAD
  one_line_error "malformed --checksums" "BAD:1" "$bin" download ogbn-arxiv --mirror "$base" --checksums BAD \
    --data-dir cache -o new.h5
  one_line_error "unknown name" "no dataset called" "$bin" download ogbn-nope
  ;;
http_error)
  make_arxiv
  sums "$work/site" arxiv.zip
  serve "$work/site" --fail arxiv.zip:500:2
  dl ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache -o arxiv.h5 > log 2>&1 || fail "500 x2: $(cat log)"
  [ "$(grep -c 'HTTP 500; retrying' log)" -eq 2 ] || fail "expected two retries: $(cat log)"
  cmp arxiv.h5 reference.h5 || fail "graph after retries differs"
  serve "$work/site" --fail arxiv.zip:404:1000
  one_line_error "404" "arxiv.zip: HTTP 404 after 3 attempts" "$bin" download ogbn-arxiv --mirror "$base" \
    --checksums SUMS --data-dir cache2 -o new.h5 --retries 2 --retry-wait 0.05
  [ "$(grep -c '^REQ /arxiv.zip ' requests)" -eq 3 ] || fail "expected 3 requests: $(cat requests)"
  [ -e new.h5 ] && fail "a graph file was written after 404"
  one_line_error "no server" "after 2 attempts" "$bin" download ogbn-arxiv --mirror "http://127.0.0.1:1" \
    --checksums SUMS --data-dir cache2 -o new.h5 --retries 1 --retry-wait 0.05
  ;;
full_disk)
  make_arxiv
  sums "$work/site" arxiv.zip
  serve "$work/site"
  if unshare -m true 2>/dev/null; then
    mkdir small
    unshare -m bash -c "mount -t tmpfs -o size=512k tmpfs '$work/small' && cd '$work' && \
      '$bin' download ogbn-arxiv --mirror '$base' --checksums SUMS --data-dir small/cache -o small/a.h5 \
      >out 2>err; echo \$? > rc; ls -A small/cache > left 2>&1" || fail "unshare/mount failed"
    [ "$(cat rc)" -eq 2 ] || fail "a full disk exited $(cat rc): $(cat err)"
    [ "$(wc -l < err)" -eq 1 ] && grep -q "free, ogbn-arxiv needs" err || fail "expected one line: $(cat err)"
    [ -s left ] && grep -qv "^\.ogbn-arxiv\.lock$\|^ogbn-arxiv$" left && fail "files left: $(cat left)"
    echo "512 KiB tmpfs: $(cat err)"
  else
    echo "no mount namespace here: the free-space refusal is not exercised"
  fi
  # A write that fails mid-transfer (files limited to 64 KiB): one line, the partial kept, then resumed.
  size=$(stat -c %s site/arxiv.zip)
  [ "$size" -gt 131072 ] || fail "the fixture is too small ($size bytes)"
  one_line_error "write fails mid-transfer" "arxiv.zip: write failed" bash -c "trap '' XFSZ; ulimit -f 64; \
    exec '$bin' download ogbn-arxiv --mirror '$base' --checksums SUMS --data-dir cache -o a.h5"
  kept=$(stat -c %s cache/.partial/ogbn-arxiv/arxiv.zip)
  [ "$kept" -eq 65536 ] || fail "the partial holds $kept bytes, expected 65536"
  [ -e a.h5 ] && fail "a graph file was written"
  dl ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache -o a.h5 > log 2>&1 || fail "after the full disk: $(cat log)"
  grep -q "resuming at" log || fail "no resume after the full disk: $(cat log)"
  cmp a.h5 reference.h5 || fail "graph after the full disk differs"
  ;;
concurrent)
  make_arxiv
  sums "$work/site" arxiv.zip
  size=$(stat -c %s site/arxiv.zip)
  serve "$work/site" --slow arxiv.zip:$((size * 2))
  dl ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache -o a.h5 > log1 2>&1 &
  p1=$!
  sleep 0.2
  dl ogbn-arxiv --mirror "$base" --checksums SUMS --data-dir cache -o a.h5 > log2 2>&1 &
  p2=$!
  wait "$p1" || fail "first job: $(cat log1)"
  wait "$p2" || fail "second job: $(cat log2)"
  cat log1 log2 | grep -q "waiting for another job" || fail "no job waited: $(cat log1 log2)"
  [ "$(grep -c '^REQ /arxiv.zip ' requests)" -eq 1 ] || fail "fetched more than once: $(cat requests)"
  cmp a.h5 reference.h5 || fail "the graph of concurrent jobs differs"
  echo "two jobs: $(cat log1 log2 | grep -m1 'waiting')"
  ;;
formats)
  data="${HALOGEN_SHARED_DATA:-$src/../shared/data}"
  ran=0
  if [ -d "$data/planetoid" ] && [ -f "$data/temporal/chickenpox.json" ]; then
    serve "$data/planetoid"
    dl cora --mirror "$base" --data-dir cache -o cora.h5 > log 2>&1 || fail "cora: $(cat log)"
    [ "$(grep -c 'SHA-256 verified (the table' log)" -eq 8 ] || fail "cora: 8 files verified expected: $(cat log)"
    "$bin" convert --format planetoid "$data/planetoid" -o cora-ref.h5 --name cora > /dev/null || fail "convert cora"
    cmp cora.h5 cora-ref.h5 || fail "cora differs from convert's"
    # A local mirror: file:// URLs (no server), resumed from a partial file like HTTP.
    mkdir -p cache/.partial/chickenpox
    head -c 100000 "$data/temporal/chickenpox.json" > cache/.partial/chickenpox/chickenpox.json
    dl chickenpox --mirror "file://$data/temporal" --data-dir cache -o pox.h5 > log 2>&1 || fail "chickenpox: $(cat log)"
    grep -q "resuming at 97.7 KiB (100000 bytes)" log || fail "chickenpox over file:// did not resume: $(cat log)"
    "$bin" convert "$data/temporal/chickenpox.json" -o pox-ref.h5 --name chickenpox > /dev/null || fail "convert pox"
    cmp pox.h5 pox-ref.h5 || fail "chickenpox differs from convert's"
    echo "cora and chickenpox: verified against the built-in table, byte-identical to convert"
    ran=1
  else
    echo "no ../shared/data: cora and chickenpox skipped"
  fi
  if python3 -c 'import scipy' 2>/dev/null; then
    # Fixtures in the Planetoid and PGT JSON layouts, under the published names, verified with --checksums (the
    # table's hashes are the real files'): a 1000-node Planetoid set (train 20, valid the next 500, test 300
    # in shuffled file order) and a Chickenpox-layout series.
    mkdir -p planetoid-site pgt-site
    python3 - <<'PY' || fail "planetoid/pgt fixtures"
import json, pickle, numpy as np, scipy.sparse as sp
rng = np.random.default_rng(1)
n, f, c = 1000, 12, 4
feat = (rng.random((n, f)) < 0.2).astype(np.float32)
labels = rng.integers(0, c, n)
onehot = np.eye(c, dtype=np.float32)[labels]
test = rng.permutation(np.arange(700, n))
parts = {"x": sp.csr_matrix(feat[:20]), "y": onehot[:20], "allx": sp.csr_matrix(feat[:700]), "ally": onehot[:700],
         "tx": sp.csr_matrix(feat[np.sort(test)]), "ty": onehot[np.sort(test)],
         "graph": {v: sorted(set(int(u) for u in rng.integers(0, n, 4))) for v in range(n)}}
for part, obj in parts.items():
    with open(f"planetoid-site/ind.cora.{part}", "wb") as out:
        pickle.dump(obj, out, protocol=2)
open("planetoid-site/ind.cora.test.index", "w").write("".join(f"{t}\n" for t in test))
T, N = 40, 6
doc = {"edges": [[i, (i + 1) % N] for i in range(N)] + [[i, (i + 2) % N] for i in range(N)],
       "node_ids": {f"n{i}": i for i in range(N)}, "FX": rng.standard_normal((T, N)).round(4).tolist()}
json.dump(doc, open("pgt-site/chickenpox.json", "w"))
PY
    (cd planetoid-site && sha256sum ind.cora.*) > PSUMS
    serve "$work/planetoid-site"
    dl cora --mirror "$base" --checksums PSUMS --data-dir fixcache -o fcora.h5 > log 2>&1 || fail "fixture cora: $(cat log)"
    "$bin" convert --format planetoid planetoid-site -o fcora-ref.h5 --name cora > /dev/null || fail "convert fixture cora"
    cmp fcora.h5 fcora-ref.h5 || fail "fixture cora differs from convert's"
    (cd pgt-site && sha256sum chickenpox.json) > JSUMS
    serve "$work/pgt-site"
    dl chickenpox --mirror "$base" --checksums JSUMS --data-dir fixcache -o fpox.h5 > log 2>&1 || fail "fixture pox: $(cat log)"
    "$bin" convert pgt-site/chickenpox.json -o fpox-ref.h5 --name chickenpox > /dev/null || fail "convert fixture pox"
    cmp fpox.h5 fpox-ref.h5 || fail "fixture chickenpox differs from convert's"
    echo "Planetoid and PGT JSON fixtures: byte-identical to convert"
    mkdir -p reddit site
    python3 - <<'PY' || fail "reddit fixture"
import numpy as np, scipy.sparse as sp
rng = np.random.default_rng(0)
n = 200
rows = rng.integers(0, n, 2000); cols = rng.integers(0, n, 2000)
sp.save_npz("reddit/reddit_graph.npz", sp.coo_matrix((np.ones(2000, np.float32), (rows, cols)), shape=(n, n)))
np.savez("reddit/reddit_data.npz", feature=rng.standard_normal((n, 6)).astype(np.float32),
         label=rng.integers(0, 4, n), node_types=rng.integers(1, 4, n), node_ids=np.arange(n))
import zipfile
with zipfile.ZipFile("site/reddit.zip", "w", zipfile.ZIP_DEFLATED) as z:
    z.write("reddit/reddit_data.npz", "reddit_data.npz"); z.write("reddit/reddit_graph.npz", "reddit_graph.npz")
PY
    sums site reddit.zip
    serve "$work/site"
    dl reddit --mirror "$base" --checksums SUMS --data-dir cache -o reddit.h5 > log 2>&1 || fail "reddit: $(cat log)"
    "$bin" convert --format reddit reddit -o reddit-ref.h5 --name reddit > /dev/null || fail "convert reddit"
    cmp reddit.h5 reddit-ref.h5 || fail "reddit differs from convert's"
    echo "reddit: byte-identical to convert"
    ran=1
  fi
  [ "$ran" -eq 1 ] || { echo "skipped: neither ../shared/data nor scipy"; exit 77; }
  ;;
*) fail "unknown case $case_name" ;;
esac
echo "download $case_name: passed"
