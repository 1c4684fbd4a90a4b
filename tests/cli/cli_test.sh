#!/usr/bin/env bash
# The command line's contract: --help lists the subcommands; unknown subcommands and unknown flags are
# one-line errors with exit 2; so is a seed that is not a whole number 0..2^64-1.
set -u
bin="$1"
fail() { echo "FAIL: $*"; exit 1; }

help=$("$bin" --help) || fail "halogen --help exited $?"
for sub in download convert generate partition train predict bench info plan; do
  grep -qE "^  $sub( |$)" <<<"$help" || fail "--help does not list $sub"
done
for sub in download convert generate partition train predict bench info plan; do
  "$bin" "$sub" --help >/dev/null || fail "halogen $sub --help exited $?"
done

check_usage_error() {
  local out rc
  out=$("$bin" "$@" 2>&1); rc=$?
  [ "$rc" -eq 2 ] || fail "halogen $* exited $rc, expected 2 (output: $out)"
  [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "halogen $* printed more than one line: $out"
  grep -q "error" <<<"$out" || fail "halogen $* did not say error: $out"
}
check_usage_error nosuch
check_usage_error train --nosuch
check_usage_error predict DIR  # --checkpoint is required
check_usage_error
check_usage_error download            # no name
check_usage_error download --retries x
# A negative or non-numeric seed is refused (it was stored as 18446744073709551615), in every command with --seed.
check_seed_error() {
  check_usage_error "$@"
  grep -q "is not a seed" <<<"$("$bin" "$@" 2>&1)" || fail "halogen $*: no seed message"
}
check_seed_error generate sbm --nodes 100 --seed -1 -o /nonexistent/x.h5
check_seed_error generate rmat --scale 8 --seed 1.5 -o /nonexistent/x.h5
check_seed_error partition /nonexistent/g.h5 -k 2 --seed -1 -o /nonexistent/p
check_seed_error train /nonexistent/p --seed -7
check_seed_error bench spmm --seed abc
check_seed_error train /nonexistent/p --seed 18446744073709551616

# One model option table (apps/model_options.h): train, bench epoch, info and plan print the same help for every
# model option (--model, the shared ones and each registered model's own), and refuse a bad value alike.
# An option entry is its "  --name" line and the continuation lines under it.
model_block() {  # the entries from --model to the first option train does not declare in the table
  "$bin" "$@" --help | awk -v names="$table_names" '
    BEGIN { n = split(names, list, " "); for (i = 1; i <= n; ++i) table[list[i]] = 1 }
    /^  -/ { name = $1; sub(/[=:].*/, "", name); keep = (name in table) }
    /^  -/ || /^                    / { if (keep) print }'
}
# The table's names: train's options from --model up to --epochs, its first option after the table.
table_names=$("$bin" train --help | awk '/^  --model/ { on = 1 } /^  --epochs/ { exit } on && /^  -/ { n = $1; sub(/[=:].*/, "", n); print n }' | tr '\n' ' ')
[ "$(wc -w <<<"$table_names")" -ge 13 ] || fail "train --help: the model option table has only: $table_names"
reference=$(model_block train)
for cmd in "bench epoch" "info" "plan"; do
  # shellcheck disable=SC2086
  other=$(model_block $cmd)
  [ "$other" = "$reference" ] || fail "halogen $cmd --help: the model options differ from train's:
$(diff <(echo "$reference") <(echo "$other"))"
done
for cmd in "train /nonexistent/p" "bench epoch /nonexistent/p" "info /nonexistent/p" "plan /nonexistent/p"; do
  # shellcheck disable=SC2086
  out=$("$bin" $cmd --heads 0 2>&1); rc=$?
  [ "$rc" -eq 2 ] && grep -q -- "--heads: value 0 must be an integer in \[1, 1024\]" <<<"$out" ||
    fail "halogen $cmd --heads 0: exit $rc: $out"
  # shellcheck disable=SC2086
  out=$("$bin" $cmd --attention-dropout nan 2>&1); rc=$?
  [ "$rc" -eq 2 ] && grep -q "must be a finite number in \[0, 1)" <<<"$out" ||
    fail "halogen $cmd --attention-dropout nan: exit $rc: $out"
done
echo "cli: all checks passed"
