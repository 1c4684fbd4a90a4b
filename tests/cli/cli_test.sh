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
echo "cli: all checks passed"
