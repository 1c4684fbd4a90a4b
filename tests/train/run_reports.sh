#!/usr/bin/env bash
# Runs that explain themselves (issue 16), on 2 ranks of a small SBM graph:
#  - --config FILE: a TOML file's options are used, the command line overrides them, a [train] section and
#    another command's section; unknown keys, sections, positional keys, a directory, a missing file and a value
#    of the wrong type are errors naming the file (exit 2); every subcommand lists --config in its --help;
#  - the metrics header: the resolved configuration (the file's and the command line's values), version,
#    commit, hosts, ranks, device, start time; valid_loss on every evaluated epoch;
#  - --progress-every (stdout is a file here, not a terminal): one progress line per epoch at a tiny period;
#  - --tensorboard: the event file read back by a hand-written TFRecord reader (both CRCs of every record), its
#    loss scalars equal the metrics' losses (float32);
#  - --resume into the same metrics file after a crash left later epochs, a final record and a torn line: the
#    file holds epochs 1..12 once each, one header, and equals a straight run bitwise.
source "$(dirname "$0")/common.sh"
"$HALOGEN_BIN" generate sbm --nodes 600 --classes 3 --features 8 --avg-degree 6 --seed 3 -o "$WORK/g.h5" >/dev/null
"$HALOGEN_BIN" partition "$WORK/g.h5" -k 2 -o "$WORK/p2" >/dev/null
run2() { timeout 120 "${MPIRUN[@]}" -np 2 "$HALOGEN_BIN" train "$WORK/p2" "$@"; }

# --- --config ---------------------------------------------------------------------------------------------
cat >"$WORK/run.toml" <<'TOML'
# options of `halogen train`, and of another command (skipped by train)
seed = 4
[train]
epochs = 9
hidden = 8
eval_every = 1      # underscores work as dashes
quiet = true
[partition]
parts = 4
TOML
run2 --config "$WORK/run.toml" --hidden 12 --metrics "$WORK/m.jsonl" --tensorboard "$WORK/tb" \
  --progress-every 0.000001 >"$WORK/out.log" 2>&1 || { cat "$WORK/out.log"; fail "training with --config"; }
progress=$(grep -c "^progress: epoch" "$WORK/out.log" || true)
[ "$progress" = 9 ] || fail "expected 9 progress lines (one per epoch at a tiny period), found $progress"
grep -q "^progress: epoch 9/9 | loss [0-9.]* | elapsed [0-9]*s | ETA 0s$" "$WORK/out.log" ||
  fail "progress line format: $(grep progress: "$WORK/out.log" | tail -1)"
grep -q "^epoch " "$WORK/out.log" && fail "quiet = true in the file did not silence the epoch lines"

python3 - "$WORK/m.jsonl" <<'PY' || fail "metrics header / valid_loss"
import json, math, re, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
header, epochs, final = lines[0], [l for l in lines[1:] if not l.get("final")], lines[-1]
assert set(header) >= {"config", "version", "commit", "hosts", "ranks", "device", "start_time"}, header.keys()
c = header["config"]
# the file's values, the command line's override (hidden), defaults for the rest
assert (c["epochs"], c["hidden"], c["seed"], c["eval-every"], c["quiet"]) == (9, 12, 4, 1, True), c
assert (c["model"], c["layers"], c["lr"], c["progress-every"]) == ("gcn", 2, 0.01, 1e-06), c
assert header["ranks"] == 2 and header["device"] == "cpu", header
assert isinstance(header["hosts"], list) and len(header["hosts"]) == 1 and header["hosts"][0], header["hosts"]
assert header["commit"] and header["version"], header
assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", header["start_time"]), header["start_time"]
assert "resumed_after_epoch" not in header
assert [e["epoch"] for e in epochs] == list(range(1, 10)), [e["epoch"] for e in epochs]
assert final.get("final") is True
# valid_loss: a mean cross-entropy, so positive and finite; it must fall as the model learns this easy graph
losses = [e["valid_loss"] for e in epochs]
assert all(math.isfinite(v) and v > 0 for v in losses), losses
assert losses[-1] < losses[0], losses
print(f"header ok: commit {header['commit']}, hosts {header['hosts']}; valid_loss {losses[0]:.4f} -> {losses[-1]:.4f}")
PY

# The header's config given back as a --config file reproduces it (GAT: its own options are in it), and an option
# of another model is named in a warning, not silently ignored.
run2 --model gat --heads 2 --hidden 4 --epochs 2 --quiet --cheb-k 3 --gat-dropout pyg --metrics "$WORK/gat.jsonl" >"$WORK/gat.log" 2>&1 ||
  { cat "$WORK/gat.log"; fail "gat run"; }
grep -qF "warning: --cheb-k has no effect with --model gat (ignored)" "$WORK/gat.log" ||
  fail "no warning for --cheb-k with gat: $(cat "$WORK/gat.log")"
python3 - "$WORK/gat.jsonl" "$WORK/back.toml" <<'PY' || fail "header config as a --config file"
import json, sys
c = json.loads(open(sys.argv[1]).readline())["config"]
assert (c["heads"], c["output-heads"], c["attention-dropout"], c["gat-dropout"], c["edge-weight"], c["comm"]) == \
    (2, 1, 0.6, "pyg", False, "auto"), c
c["metrics"] = sys.argv[1] + ".again"
open(sys.argv[2], "w").write("".join(f"{k} = {json.dumps(v)}\n" for k, v in c.items() if k != "dir"))
PY
run2 --config "$WORK/back.toml" >/dev/null 2>&1 || fail "the header's config refused as --config"
python3 - "$WORK/gat.jsonl" <<'PY' || fail "the run from the header's config differs"
import json, sys
a, b = (json.loads(open(p).readline())["config"] for p in (sys.argv[1], sys.argv[1] + ".again"))
a.pop("metrics"), b.pop("metrics")
assert a == b, set(a.items()) ^ set(b.items())
PY
echo "header config given back as --config: same config"

# --- TensorBoard --------------------------------------------------------------------------------------------
events=$(ls "$WORK"/tb/events.out.tfevents.* 2>/dev/null | head -1)
[ -n "$events" ] || fail "no event file in $WORK/tb"
python3 "$HERE/read_tfevents.py" "$events" >"$WORK/tb.json" || fail "the event file does not read back"
python3 - "$WORK/tb.json" "$WORK/m.jsonl" <<'PY' || fail "TensorBoard scalars differ from the metrics"
import json, struct, sys
tb = json.load(open(sys.argv[1]))
metrics = [json.loads(l) for l in open(sys.argv[2])][1:-1]
assert tb["file_version"] == "brain.Event:2", tb["file_version"]
f32 = lambda x: struct.unpack("<f", struct.pack("<f", x))[0]  # the events hold float32: exact after rounding
for tag in ("loss", "valid_loss", "valid_acc", "test_acc"):
    ours = [[m["epoch"], f32(m[tag])] for m in metrics]
    assert tb["scalars"][tag] == ours, (tag, tb["scalars"][tag], ours)
print(f"tensorboard ok: {tb['records']} records, tags {sorted(tb['scalars'])}")
PY

# --- --config errors, and --config in every subcommand's help -----------------------------------------------
expect_config_error() {  # expect_config_error MESSAGE FILE_TEXT
  printf '%s\n' "$2" >"$WORK/bad.toml"
  if "$HALOGEN_BIN" train "$WORK/p2" --config "$WORK/bad.toml" >"$WORK/err" 2>&1; then fail "accepted: $2"; fi
  [ "$(grep -c . "$WORK/err")" = 1 ] || fail "not one line: $(cat "$WORK/err")"
  grep -qF -- "$1" "$WORK/err" || fail "for '$2' expected '$1', got: $(cat "$WORK/err")"
}
expect_config_error "$WORK/bad.toml: unknown key \"bogus\" (not an option of \`halogen train\`" "bogus = 1"
expect_config_error "$WORK/bad.toml: unknown section [model]" $'[model]\nhidden = 4'
expect_config_error "$WORK/bad.toml: unknown key \"hidden.width\"" $'[train.hidden]\nwidth = 4'
expect_config_error "$WORK/bad.toml: \"dir\" is a positional argument" 'dir = "x"'
expect_config_error "--epochs: Value abc" 'epochs = "abc"'
expect_config_error "values may come from --config $WORK/bad.toml" 'epochs = "abc"'
expect_config_error "key \"quiet\" is a flag" 'quiet = 3'
"$HALOGEN_BIN" train "$WORK/p2" --config "$WORK" >"$WORK/err" 2>&1 && fail "a directory as --config was accepted"
grep -qF "$WORK: is a directory" "$WORK/err" || fail "directory: $(cat "$WORK/err")"
"$HALOGEN_BIN" train "$WORK/p2" --config "$WORK/none.toml" >"$WORK/err" 2>&1 && fail "a missing --config was accepted"
grep -qF "$WORK/none.toml: no such file" "$WORK/err" || fail "missing file: $(cat "$WORK/err")"
for sub in convert "generate sbm" "generate temporal-sbm" "generate rmat" partition train "bench spmm" "bench halo" info; do
  # shellcheck disable=SC2086
  # (read whole: grep -q exiting early would SIGPIPE a slow writer, a failure under pipefail)
  help_text=$("$HALOGEN_BIN" $sub --help)
  grep -q -- "--config FILE" <<<"$help_text" || fail "\`halogen $sub --help\` does not list --config"
done
# another command: partition reads its own section of the same file (parts = 4)
"$HALOGEN_BIN" partition "$WORK/g.h5" -o "$WORK/p4" --config "$WORK/run.toml" >/dev/null || fail "partition --config"
[ -f "$WORK/p4/part-00003.h5" ] || fail "partition did not read parts = 4 from [partition]"
# a group's section ([generate]) and --config after the group's name both reach the subcommand
printf '[generate]\nnodes = 123\n[generate.sbm]\nclasses = 3\n[train]\nepochs = 2\n' >"$WORK/gen.toml"
for order in "generate --config $WORK/gen.toml sbm" "generate sbm --config $WORK/gen.toml"; do
  # shellcheck disable=SC2086
  "$HALOGEN_BIN" $order -o "$WORK/gen.h5" >"$WORK/gen.log" 2>&1 || fail "$order: $(cat "$WORK/gen.log")"
  grep -q "123 nodes, .* 3 classes" "$WORK/gen.log" || fail "$order ignored the file: $(cat "$WORK/gen.log")"
done
"$HALOGEN_BIN" generate rmat --config "$WORK/gen.toml" -o "$WORK/gen.h5" >"$WORK/err" 2>&1 &&
  fail "[generate] nodes accepted by generate rmat (which has no --nodes)"
grep -qF "gen.toml: unknown key \"nodes\" (not an option of \`halogen generate rmat\`" "$WORK/err" ||
  fail "generate rmat: $(cat "$WORK/err")"

# --- resume into the same metrics file ----------------------------------------------------------------------
common=(--seed 2 --hidden 8 --quiet --eval-every 1)
run2 "${common[@]}" --epochs 12 --metrics "$WORK/straight.jsonl" >/dev/null || fail "straight run"
run2 "${common[@]}" --epochs 6 --checkpoint "$WORK/ck" --metrics "$WORK/same.jsonl" >/dev/null || fail "first half"
# What a crash after the checkpoint leaves: a later epoch, a final record, a torn line.
sed -n 4p "$WORK/straight.jsonl" | sed 's/"epoch":3,/"epoch":7,/' >>"$WORK/same.jsonl"
tail -1 "$WORK/straight.jsonl" >>"$WORK/same.jsonl"
printf '{"epoch": 8, "loss": 0.' >>"$WORK/same.jsonl"
run2 "${common[@]}" --epochs 12 --checkpoint "$WORK/ck" --resume --metrics "$WORK/same.jsonl" >/dev/null || fail "resumed"
python3 - "$WORK/same.jsonl" <<'PY' || fail "the resumed metrics file"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
headers = [l for l in lines if "config" in l]
epochs = [l["epoch"] for l in lines if "epoch" in l and not l.get("final")]
finals = [l for l in lines if l.get("final")]
assert len(headers) == 1 and "config" in lines[0] and "resumed_after_epoch" not in lines[0], headers
assert epochs == list(range(1, 13)), epochs
assert len(finals) == 1 and lines[-1].get("final"), finals
PY
compare "$WORK/straight.jsonl" "$WORK/same.jsonl" --rel 0 --min-epochs 12 --final || fail "resumed file differs"
echo "run reports: OK"
