#!/usr/bin/env bash
# meta.json grows with P, not P x P (issue 15, finding 14: 276 MB at P = 5000 when it held the P x P rows_sent
# table): a generated 1024-vertex graph is partitioned into 64 and 512 parts (--method contiguous, fast); each
# meta.json is at most 2 KiB per part, grows by at most 2 KiB per added part, and holds no list of P lists.
# Every reader still reads it: `halogen info DIR --check` passes on the 512-part directory.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$bin" generate sbm --nodes 1024 --classes 4 --features 4 --avg-degree 4 --seed 1 -o "$work/g.h5" >/dev/null ||
  fail "generate"
for parts in 64 512; do
  "$bin" partition "$work/g.h5" -k "$parts" --method contiguous -o "$work/p$parts" >/dev/null 2>&1 ||
    fail "partition -k $parts"
done
python3 - "$work/p64/meta.json" "$work/p512/meta.json" <<'PY' || exit 1
import json, os, sys
sizes = {}
for path, parts in zip(sys.argv[1:], (64, 512)):
    size = os.path.getsize(path)
    sizes[parts] = size
    print("P = %d: meta.json %d bytes, %.0f bytes per part" % (parts, size, size / parts))
    if size > 2048 * parts:
        sys.exit("FAIL: %s: %d bytes, more than 2 KiB per part" % (path, size))

    def walk(value, where):  # no list of num_parts lists: per-pair data belongs in the shards
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, where + "/" + key)
        elif isinstance(value, list):
            if len(value) >= parts and all(isinstance(item, list) for item in value):
                sys.exit("FAIL: %s: %s is a list of %d lists (per pair of parts)" % (path, where, len(value)))
            for item in value:
                walk(item, where + "[]")
    walk(json.load(open(path)), "")
growth = (sizes[512] - sizes[64]) / (512 - 64)
print("growth: %.0f bytes per added part" % growth)
if growth > 2048:
    sys.exit("FAIL: meta.json grows by %.0f bytes per added part, more than 2 KiB" % growth)
PY
out=$("$bin" info "$work/p512" --check 2>&1) || fail "info --check on 512 parts: $out"
grep -q "^check: OK" <<<"$out" || fail "info --check printed no OK line: $(tail -n 3 <<<"$out")"
echo "meta.json size: OK"
