#!/usr/bin/env bash
# `halogen predict` on a nearly full disk (issue 31, item 1): it used to exit 0, print "wrote ...", and replace a
# good predictions file with one of the right shape holding zeros (HDF5 reports neither a chunk it could not
# flush at close nor, on reading, a chunk never written). Now every run into a small tmpfs filled to leave
# 4 KiB .. 1 MiB free either
#   - fails: non-zero exit, one line naming the output, the earlier file byte-identical, no temporary left; or
#   - succeeds: the new file's datasets equal those of a run on a roomy disk;
# and the smallest fill levels must fail (the test would pass vacuously otherwise). Probabilities and
# --embeddings both. Runs in a private mount namespace (root); exits 77 (skipped) where that is refused.
source "$(dirname "$0")/common.sh"
python3 -c 'import h5py, numpy' 2>/dev/null || { echo "skipped: python3 lacks h5py/numpy"; exit 77; }
unshare -m true 2>/dev/null || { echo "skipped: unshare -m is not permitted here"; exit 77; }
"$HALOGEN_BIN" generate sbm --nodes 20000 --classes 16 --features 32 --avg-degree 8 --seed 4 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 1 -o "$WORK/g.p1" >/dev/null
"$HALOGEN_BIN" train "$WORK/g.p1" --hidden 16 --epochs 3 --quiet --checkpoint "$WORK/ck" >/dev/null || fail "training"
"$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/ck" --output "$WORK/good.h5" >/dev/null || fail "predict"
"$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/ck" --embeddings 0 --output "$WORK/good-e.h5" >/dev/null ||
  fail "predict --embeddings"
size_kib=$(( ( $(stat -c %s "$WORK/good.h5") + $(stat -c %s "$WORK/good-e.h5") ) / 1024 + 2048 ))

cat >"$WORK/inside.sh" <<EOF_INSIDE
set -u
disk="$WORK/disk"
mkdir -p "\$disk"
mount -t tmpfs -o size=${size_kib}k none "\$disk" || exit 77
for free_kib in 4 8 16 24 64 256 1024; do
  for kind in probabilities embeddings; do
    rm -rf "\$disk"/* "\$disk"/.[!.]* 2>/dev/null
    good="$WORK/good.h5"; extra=()
    [ "\$kind" = embeddings ] && { good="$WORK/good-e.h5"; extra=(--embeddings 0); }
    cp "\$good" "\$disk/out.h5"
    # Fill all but free_kib KiB (tmpfs counts whole pages).
    avail=\$(df -Pk "\$disk" | awk 'NR == 2 {print \$4}')
    [ "\$avail" -gt "\$free_kib" ] && dd if=/dev/zero of="\$disk/filler" bs=1k count=\$((avail - free_kib)) 2>/dev/null
    "$HALOGEN_BIN" predict "$WORK/g.p1" --checkpoint "$WORK/ck" "\${extra[@]}" --output "\$disk/out.h5" \
      >"$WORK/run.out" 2>"$WORK/run.err"
    status=\$?
    left=\$(ls -A "\$disk" | grep -v -x -e out.h5 -e filler | tr '\n' ' ')
    if [ "\$status" = 0 ]; then
      cp "\$disk/out.h5" "$WORK/new.h5"
      echo "\$free_kib \$kind ok"
    else
      cmp -s "\$good" "\$disk/out.h5" && same=same || same=changed
      echo "\$free_kib \$kind failed \$status \$same lines=\$(grep -c . "$WORK/run.err") left=[\$left] \$(head -1 "$WORK/run.err")"
    fi
    [ -z "\$left" ] || echo "\$free_kib \$kind LEFT \$left"
    if [ "\$status" = 0 ]; then
      python3 - "\$good" "$WORK/new.h5" <<'EOF_PY' || echo "\$free_kib \$kind MISMATCH"
import h5py, numpy as np, sys
a, b = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
for name in a:
    assert np.array_equal(a[name][:], b[name][:]), name
EOF_PY
    fi
  done
done
EOF_INSIDE
unshare -m bash "$WORK/inside.sh" >"$WORK/levels.log" 2>&1
status=$?
[ "$status" = 77 ] && { echo "skipped: cannot mount a tmpfs here"; exit 77; }
cat "$WORK/levels.log"
! grep -q -e "LEFT" -e "MISMATCH" "$WORK/levels.log" || fail "a temporary was left behind or a written file differs"
# Every failure: non-zero, one line naming the output, the earlier file byte-identical.
awk '$3 == "failed" && ($5 != "same" || $6 != "lines=1") {bad = 1} END {exit bad}' "$WORK/levels.log" ||
  fail "a failed run changed the earlier file or printed more than one line"
grep "failed" "$WORK/levels.log" | grep -v -q "out.h5" && fail "an error line does not name the output"
# The smallest levels cannot hold the output: they must fail (both kinds).
for kind in probabilities embeddings; do
  grep -q "^4 $kind failed" "$WORK/levels.log" || fail "4 KiB free: predict $kind did not fail"
done
echo "predict on a full disk: OK ($(grep -c failed "$WORK/levels.log") refused, $(grep -c ' ok$' "$WORK/levels.log") written)"
