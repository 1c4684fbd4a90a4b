#!/usr/bin/env bash
# Nothing is lost on a full disk or a kill (issue 15, findings 3, 4, 5, 9, 10):
#  - a full disk (`ulimit -f`, SIGXFSZ ignored so writes fail with EFBIG) during convert, generate, partition,
#    partition --force, train --metrics, train --checkpoint and train --tensorboard ends with exit 2 and one line naming the output, and leaves nothing
#    half-written where a reader would take it (no output file, no part-*.h5 or meta.json, no temporary; an
#    old output untouched; a metrics file of complete lines only, an event file of complete records only);
#  - `partition --force` killed with SIGKILL at each named phase and at timed moments leaves the old or the new
#    partition, complete (`info --check` passes, its part count is the old or the new one);
#  - a second job writing the same output is refused by the lock, naming the lock file and the holder's pid;
#  - an output equal to an input (convert X -o X, any spelling) is refused, and the input is unchanged.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
# HALOGEN_TEST_KEEP_GOING=1 reports every failed check instead of stopping at the first (to list what an older
# build gets wrong).
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
  [ "${HALOGEN_TEST_KEEP_GOING:-0}" = 1 ] || exit 1
  return 1
}
cd "$work" || exit 1

# expect_error NAME PATTERN CMD...: exit 2, exactly one line of output, matching PATTERN, no temporary named.
expect_error() {
  local name="$1" pattern="$2"
  shift 2
  local out rc
  out=$("$@" 2>&1 >/dev/null); rc=$?
  [ "$rc" -eq 2 ] || fail "$name: exited $rc, expected 2: $out"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "$name: more than one line: $out"
  grep -q -- "$pattern" <<<"$out" || fail "$name: expected '$pattern' in: $out"
  grep -q '\.tmp\.' <<<"$out" && fail "$name: the message names a temporary file: $out"
  echo "$name: $out"
}
# full_disk KiB CMD...: runs CMD with every file limited to KiB (a write past it fails with EFBIG).
full_disk() {
  local kib="$1"
  shift
  (trap '' XFSZ; ulimit -f "$kib"; exec "$@")
}
# levels_of BYTES: file limits (KiB) of 1/16, 1/4 and 3/4 of an output of BYTES: several fill levels.
levels_of() { local kib=$(( $1 / 1024 )); echo $(( kib / 16 + 1 )) $(( kib / 4 + 1 )) $(( kib * 3 / 4 + 1 )); }
no_leftovers() {  # no_leftovers NAME DIR: no temporary or lock file of any job left in DIR
  local left
  left=$(find "$2" -maxdepth 2 \( -name '*.tmp.*' -o -name '*.halogen.lock' \) | head -3)
  [ -z "$left" ] || fail "$1: left behind: $left"
}
parts_of() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['num_parts'])" "$1/meta.json"; }
check_ok() {  # check_ok NAME DIR PARTS...: info --check passes and the partition has one of PARTS parts
  local name="$1" dir="$2" out p
  shift 2
  out=$("$bin" info "$dir" --check 2>&1) || fail "$name: info --check failed: $out"
  grep -q "check: OK" <<<"$out" || fail "$name: info --check did not say OK: $out"
  p=$(parts_of "$dir")
  for want in "$@"; do [ "$p" = "$want" ] && return 0; done
  fail "$name: the partition has $p parts, expected one of $*"
}

# 1500 vertices x 8 features: the graph file is ~270 KiB, each of 4 shards ~70 KiB (a 32 KiB limit stops the
# first shard; the assignment, ~6 KiB, fits).
"$bin" generate sbm --nodes 1500 --classes 6 --homophily 0.95 --features 8 -o g.h5 >/dev/null ||
  fail "generate exited $?"
python3 -c "
import random
random.seed(1)
with open('edges.txt', 'w') as f:
    for _ in range(20000): f.write('%d %d\n' % (random.randrange(5000), random.randrange(5000)))"

# --- full disk: convert, generate ---
expect_error "convert on a full disk" "^halogen: error: out.h5: " full_disk 64 "$bin" convert edges.txt -o out.h5
[ -e out.h5 ] && fail "convert on a full disk left out.h5"
"$bin" convert edges.txt -o out.h5 >/dev/null || fail "convert exited $?"
cp out.h5 out.before.h5
expect_error "convert over an old file on a full disk" "out.h5" full_disk 64 "$bin" convert edges.txt -o out.h5 \
  --directed
cmp -s out.h5 out.before.h5 || fail "a failed convert changed the old out.h5"
expect_error "generate on a full disk" "^halogen: error: g2.h5: " full_disk 64 \
  "$bin" generate sbm --nodes 3000 --features 16 -o g2.h5
[ -e g2.h5 ] && fail "generate on a full disk left g2.h5"
no_leftovers "convert/generate on a full disk" .

# --- full disk: partition (fresh directory, then --force over a complete one) ---
expect_error "partition on a full disk" "p4/part-00000.h5" full_disk 32 "$bin" partition g.h5 -k 4 -o p4
[ -e p4 ] && fail "a failed partition left p4 (files: $(ls p4))"
mkdir empty
expect_error "partition into an empty directory on a full disk" "empty/part-00000.h5" \
  full_disk 32 "$bin" partition g.h5 -k 4 -o empty
[ -z "$(ls -A empty)" ] || fail "a failed partition left files in empty/: $(ls -A empty)"
"$bin" partition g.h5 -k 4 -o p4 >/dev/null || fail "partition exited $?"
expect_error "partition --force on a full disk" "p4/part-00000.h5" full_disk 32 "$bin" partition g.h5 -k 3 -o p4 --force
check_ok "partition --force on a full disk" p4 4
no_leftovers "partition on a full disk" .

# --- full disk: train --metrics (exit 2, one error line, a file of complete JSON lines) ---
# The limit applies to the rank only (mpirun's own session files must not hit it): 1 KiB holds a few lines.
if command -v mpirun >/dev/null; then
  "$bin" partition g.h5 -k 1 -o p1 >/dev/null || fail "partition -k 1 exited $?"
  rc=0
  timeout 120 mpirun --oversubscribe --bind-to none -np 1 bash -c \
    "trap '' XFSZ; ulimit -f 1; exec \"$bin\" train p1 --epochs 50 --metrics metrics.jsonl" >/dev/null 2>err || rc=$?
  [ "$rc" -eq 2 ] || fail "train --metrics on a full disk exited $rc, expected 2: $(cat err)"
  [ "$(grep -c 'halogen: error' err)" -eq 1 ] || fail "train --metrics on a full disk: not one error line: $(cat err)"
  grep -q "halogen: error: metrics.jsonl: cannot write metrics: File too large" err ||
    fail "train --metrics on a full disk: unexpected message: $(cat err)"
  python3 -c "
import json, sys
lines = open('metrics.jsonl').read().split('\n')
assert lines[-1] == '', 'the file ends inside a line: %r' % lines[-1][-60:]
for l in lines[:-1]: json.loads(l)
assert len(lines) > 1, 'no line at all'" || fail "train --metrics on a full disk left half a line in metrics.jsonl"
  echo "train --metrics on a full disk: $(grep 'halogen: error' err), $(($(wc -l <metrics.jsonl))) complete lines kept"
  # --- full disk: train --checkpoint (exit 2, one error line naming last.h5; an earlier last.h5 untouched,
  # no new one and no temporary left where a reader would take it). The limit is half the checkpoint's size.
  "$bin" train p1 --epochs 2 --checkpoint ck --quiet >/dev/null 2>&1 || fail "train --checkpoint exited $?"
  [ -f ck/last.h5 ] || fail "train --checkpoint wrote no ck/last.h5"
  before=$(md5sum <ck/last.h5)
  for half_kib in $(levels_of "$(stat -c %s ck/last.h5)"); do  # 1/16, 1/4 and 3/4 of the checkpoint
  for dir in ck ck_new; do
    rc=0
    timeout 120 mpirun --oversubscribe --bind-to none -np 1 bash -c \
      "trap '' XFSZ; ulimit -f $half_kib; exec \"$bin\" train p1 --epochs 2 --checkpoint $dir --quiet" >/dev/null 2>err ||
      rc=$?
    [ "$rc" -eq 2 ] || fail "train --checkpoint $dir on a full disk exited $rc, expected 2: $(cat err)"
    [ "$(grep -c 'halogen: error' err)" -eq 1 ] || fail "train --checkpoint $dir on a full disk: not one error line: $(cat err)"
    grep -q "halogen: error: .*$dir/last.h5" err || fail "train --checkpoint $dir on a full disk: message does not name $dir/last.h5: $(cat err)"
    ! grep -q '\.tmp\.' err || fail "train --checkpoint $dir on a full disk: the message names a temporary: $(cat err)"
    no_leftovers "train --checkpoint $dir on a full disk" "$dir"
  done
  [ "$(md5sum <ck/last.h5)" = "$before" ] || fail "train --checkpoint on a full disk changed the earlier ck/last.h5"
  [ ! -e ck_new/last.h5 ] || fail "train --checkpoint on a full disk left ck_new/last.h5"
  done
  echo "train --checkpoint on a full disk (limit $half_kib KiB): $(grep 'halogen: error' err); earlier last.h5 untouched"
  # --- full disk: train --tensorboard (exit 2, one error line naming the event file; the file holds only
  # complete records, each with both CRCs right). 2 KiB holds the header and a few dozen epochs' records.
  rc=0
  timeout 120 mpirun --oversubscribe --bind-to none -np 1 bash -c \
    "trap '' XFSZ; ulimit -f 2; exec \"$bin\" train p1 --epochs 200 --eval-every 1 --quiet --tensorboard tb" \
    >/dev/null 2>err || rc=$?
  [ "$rc" -eq 2 ] || fail "train --tensorboard on a full disk exited $rc, expected 2: $(cat err)"
  [ "$(grep -c "halogen: error" err)" -eq 1 ] || fail "train --tensorboard on a full disk: not one error line: $(cat err)"
  grep -q "halogen: error: tb/events.out.tfevents.*: cannot write TensorBoard events: File too large" err ||
    fail "train --tensorboard on a full disk: unexpected message: $(cat err)"
  events=$(ls tb/events.out.tfevents.*)
  python3 "$here/../train/read_tfevents.py" "$events" >tb.json ||
    fail "train --tensorboard on a full disk left a torn record in $events"
  python3 -c "
import json
tb = json.load(open('tb.json'))
assert tb['file_version'] == 'brain.Event:2'
assert len(tb['scalars']['loss']) >= 5, tb['scalars']['loss']" || fail "train --tensorboard on a full disk: too few records kept"
  echo "train --tensorboard on a full disk: $(grep 'halogen: error' err | cut -c1-160)"
else
  echo "train --metrics on a full disk: skipped (no mpirun)"
fi

# --- full disk at several fill levels, over an earlier output: for each writer, a file limit of 1/16, 1/4 and
# 3/4 of what it writes. Every level: exit 2, one line naming the output, the earlier output byte-identical
# (a directory: every file), nothing left behind. ---
digest() { (cd "$1" 2>/dev/null && find . -type f | sort | xargs md5sum) || md5sum <"$1"; }
"$bin" convert edges.txt -o lv.h5 >/dev/null || fail "convert exited $?"
"$bin" generate sbm --nodes 3000 --features 16 --seed 2 -o lvg.h5 >/dev/null || fail "generate exited $?"
"$bin" partition g.h5 -k 2 -o lvp >/dev/null || fail "partition exited $?"
rm -rf scratch
for writer in convert generate partition; do
  # The command rewrites the earlier output with other content; its size is measured on a scratch name first.
  case $writer in
    convert) out=lv.h5; cmd=("$bin" convert edges.txt --directed -o) ;;
    generate) out=lvg.h5; cmd=("$bin" generate sbm --nodes 3000 --features 16 --seed 3 -o) ;;
    partition) out=lvp; cmd=("$bin" partition g.h5 -k 3 --force -o) ;;
  esac
  rm -rf scratch; "${cmd[@]}" scratch >/dev/null || fail "$writer into scratch exited $?"
  size=$(find scratch -type f \( -name scratch -o -name 'part-*.h5' \) -printf '%s\n' | sort -n | head -1)
  cmd+=("$out")
  before=$(digest "$out")
  for kib in $(levels_of "$size"); do
    expect_error "$writer at a $kib KiB file limit" "^halogen: error: $out" full_disk "$kib" "${cmd[@]}"
    [ "$(digest "$out")" = "$before" ] || fail "$writer at a $kib KiB file limit changed the earlier $out"
    no_leftovers "$writer at a $kib KiB file limit" .
    [ "$writer" != partition ] || no_leftovers "$writer at a $kib KiB file limit" lvp
  done
done

# --- partition --force killed (SIGKILL) at each phase: the old (4 parts) or the new (3 parts), complete ---
for point in assignment shard before-rename meta exchanged; do
  rc=0
  HALOGEN_FAULT_KILL_AT=$point "$bin" partition g.h5 -k 3 -o p4 --force >/dev/null 2>&1 || rc=$?
  [ "$rc" -eq 137 ] || fail "partition --force with HALOGEN_FAULT_KILL_AT=$point exited $rc, expected 137 (killed)"
  if [ "$point" = exchanged ]; then want=3; else want=4; fi
  check_ok "partition --force killed at $point" p4 "$want"
  [ "$want" = 3 ] && { "$bin" partition g.h5 -k 4 -o p4 --force >/dev/null || fail "re-partition exited $?"; }
  echo "partition --force killed at $point: the $([ "$want" = 4 ] && echo old || echo new) partition, complete"
done
# ... and at timed moments (what lies between the named points); each kill lands somewhere in the run.
for delay in 0.05 0.15 0.3; do
  "$bin" partition g.h5 -k 3 -o p4 --force >/dev/null 2>&1 &
  pid=$!
  pids+=("$pid")
  sleep "$delay"
  kill -KILL "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  check_ok "partition --force killed after ${delay}s" p4 3 4
done
# The next job on p4 removes what the killed ones left behind.
"$bin" partition g.h5 -k 2 -o p4 --force >/dev/null || fail "partition after the kills exited $?"
check_ok "partition after the kills" p4 2
no_leftovers "partition after the kills" .

# ... and where the filesystem has no RENAME_EXCHANGE: two renames; a kill between them leaves p4 absent and the
# old partition under .p4.old.*, which the next job on p4 puts back before anything else.
HALOGEN_FAULT_NO_EXCHANGE=1 "$bin" partition g.h5 -k 3 -o p4 --force >/dev/null || fail "partition (no exchange) exited $?"
check_ok "partition --force by two renames" p4 3
rc=0
HALOGEN_FAULT_NO_EXCHANGE=1 HALOGEN_FAULT_KILL_AT=moved-old "$bin" partition g.h5 -k 2 -o p4 --force >/dev/null 2>&1 ||
  rc=$?
[ "$rc" -eq 137 ] || fail "partition --force killed between the two renames exited $rc, expected 137"
[ -e p4 ] && fail "p4 exists after a kill between the two renames (the test hook did not work)"
ls -d .p4.old.* >/dev/null 2>&1 || fail "no .p4.old.* after a kill between the two renames"
rc=0
HALOGEN_FAULT_KILL_AT=assignment "$bin" partition g.h5 -k 2 -o p4 --force >/dev/null 2>&1 || rc=$?
check_ok "the next job after a kill between the two renames" p4 3
echo "partition --force killed between two renames: the old partition, restored by the next job"

# --- the lock: a second job on the same output is refused while the first holds it ---
HALOGEN_FAULT_STOP_AT=assignment "$bin" partition g.h5 -k 3 -o p4 --force >first.out 2>&1 &
first=$!
pids+=("$first")
for _ in $(seq 300); do [ "$(awk '{print $3}' "/proc/$first/stat" 2>/dev/null)" = T ] && break; sleep 0.1; done
[ "$(awk '{print $3}' "/proc/$first/stat" 2>/dev/null)" = T ] || fail "the first partition did not stop: $(cat first.out)"
expect_error "second partition into p4" "\.p4\.halogen\.lock held by pid $first" \
  "$bin" partition g.h5 -k 4 -o p4 --force
expect_error "second partition into p4 (another spelling)" "held by pid $first" \
  "$bin" partition ./g.h5 -k 4 -o "$work/./p4/" --force
kill -CONT "$first"
wait "$first" || fail "the first partition exited $? after the second was refused: $(cat first.out)"
check_ok "the first partition, after the refused second" p4 3
HALOGEN_FAULT_STOP_AT=before-rename "$bin" generate sbm --nodes 300 -o g3.h5 >/dev/null 2>&1 &
first=$!
pids+=("$first")
for _ in $(seq 300); do [ "$(awk '{print $3}' "/proc/$first/stat" 2>/dev/null)" = T ] && break; sleep 0.1; done
expect_error "second generate into g3.h5" "\.g3\.h5\.halogen\.lock held by pid $first" \
  "$bin" generate sbm --nodes 300 -o g3.h5
expect_error "convert into g3.h5 while generate writes it" "held by pid $first" "$bin" convert edges.txt -o g3.h5
kill -CONT "$first"
wait "$first" || fail "the first generate exited $?"
no_leftovers "after the lock tests" .

# --- output equal to an input ---
cp edges.txt edges.before
expect_error "convert X -o X" "edges.txt is also the input" "$bin" convert edges.txt -o edges.txt
expect_error "convert X -o ./X" "is also the input" "$bin" convert edges.txt -o ./edges.txt --format snap
ln -s edges.txt link.txt
expect_error "convert X -o a symlink to X" "is also the input" "$bin" convert link.txt -o edges.txt
printf '%%%%MatrixMarket matrix coordinate pattern general\n3 3 2\n1 2\n2 3\n' >m.mtx
cp m.mtx m.before
expect_error "convert m.mtx -o m.mtx" "is also the input" "$bin" convert m.mtx -o m.mtx
mkdir -p ogb && cp -r "${HALOGEN_SOURCE_DIR:-$(dirname "$0")/../..}/tests/io/npz_stored/." ogb/ 2>/dev/null
if [ -f ogb/raw/data.npz ]; then
  cp ogb/raw/data.npz data.before
  expect_error "convert DIR -o DIR/raw/data.npz" "is also the input" "$bin" convert ogb -o ogb/raw/data.npz
  cmp -s ogb/raw/data.npz data.before || fail "convert changed its input ogb/raw/data.npz"
fi
cmp -s edges.txt edges.before || fail "convert changed its input edges.txt"
cmp -s m.mtx m.before || fail "convert changed its input m.mtx"
# partition: the graph file inside the directory --force would replace; anything else in it.
cp g.h5 p4/g.h5
expect_error "partition p4/g.h5 -o p4 --force" "the graph file p4/g.h5 is inside the output directory" \
  "$bin" partition p4/g.h5 -k 2 -o p4 --force
rm p4/g.h5
echo notes >p4/notes.txt
expect_error "partition --force over a directory holding other files" "holds notes.txt" \
  "$bin" partition g.h5 -k 2 -o p4 --force
[ -f p4/notes.txt ] || fail "partition --force removed notes.txt"
check_ok "partition refused over notes.txt" p4 3
no_leftovers "at the end" .

# A legal 249-byte output name (its lock and temporary names are shortened with a hash, so they fit NAME_MAX).
long=$(printf 'g%.0s' $(seq 246)).h5
"$bin" generate sbm --nodes 200 --classes 2 --avg-degree 4 --features 4 --seed 1 -o "$long" >/dev/null 2>long.err ||
  fail "generate -o <249-byte name>: $(cat long.err)"
"$bin" info "$long" >/dev/null 2>&1 || fail "the 249-byte graph file does not read"
rm -f "$long"
no_leftovers "after a long output name" .

# An output directory that cannot be written (a read-only mount in a private namespace): one line naming the
# output and the directory with the reason, not a hidden temporary.
if unshare -m true 2>/dev/null; then
  mkdir -p ro
  out=$(unshare -m bash -c "mount -t tmpfs -o ro,size=64k none ro || exit 77; \"$bin\" generate sbm --nodes 200 \
        --classes 2 --avg-degree 4 --features 4 --seed 1 -o ro/g.h5" 2>&1); rc=$?
  if [ "$rc" != 77 ]; then
    [ "$rc" -eq 2 ] || fail "generate into a read-only directory: exit $rc: $out"
    [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "read-only directory: more than one line: $out"
    grep -q "ro/g.h5: cannot write in the directory .*/ro: Read-only file system" <<<"$out" ||
      fail "read-only directory: message: $out"
    echo "read-only directory: $out"
  fi
fi

[ "$failures" -eq 0 ] || { echo "atomic output: $failures checks failed"; exit 1; }
echo "atomic output: all checks passed"
