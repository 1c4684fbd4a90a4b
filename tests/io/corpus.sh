#!/usr/bin/env bash
# Malformed-input corpus (tests/io/corpus/<converter>/<case>/): every case is refused with exit 2, one line on
# stderr holding the exact substring of its `expected_error` file, and nothing written (the output directory
# stays empty: no graph file, no temporary). A case holds its inputs, `command` (halogen's arguments, paths
# relative to the case directory; `planetoid DIR NAME` runs scripts/convert_planetoid.py) and expected_error.
# Usage: corpus.sh [CASE-DIR...] (default: every case). Planetoid cases skip themselves without numpy/scipy/h5py.
set -u
bin="${HALOGEN_BIN:?HALOGEN_BIN not set}"
src="${HALOGEN_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
corpus="$src/tests/io/corpus"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
have_python_deps=0
python3 -c "import numpy, scipy, h5py" 2>/dev/null && have_python_deps=1

cases=("$@")
[ ${#cases[@]} -gt 0 ] || mapfile -t cases < <(find "$corpus" -mindepth 2 -maxdepth 2 -type d | sort)
failed=0 passed=0 skipped=0
for case_dir in "${cases[@]}"; do
  name="$(basename "$(dirname "$case_dir")")/$(basename "$case_dir")"
  [ -f "$case_dir/command" ] && [ -f "$case_dir/expected_error" ] || { echo "FAIL $name: no command or expected_error"; failed=$((failed + 1)); continue; }
  rm -rf "$work/case" "$work/out" && cp -r "$case_dir" "$work/case" && mkdir "$work/out"
  read -r -a args <"$case_dir/command"
  expected=$(cat "$case_dir/expected_error")
  if [ "${args[0]}" = planetoid ]; then
    if [ $have_python_deps -eq 0 ]; then echo "skip $name: numpy/scipy/h5py missing"; skipped=$((skipped + 1)); continue; fi
    output=$(cd "$work/case" && timeout 60 python3 "$src/scripts/convert_planetoid.py" "${args[@]:1}" -o "$work/out/graph.h5" 2>&1)
  else
    output=$(cd "$work/case" && timeout 60 "$bin" "${args[@]}" -o "$work/out/graph.h5" 2>&1)
  fi
  status=$?
  problem=""
  [ $status -eq 2 ] || problem="exit $status, expected 2"
  [ -z "$problem" ] && [ "$(printf '%s\n' "$output" | wc -l)" -ne 1 ] && problem="more than one line"
  [ -z "$problem" ] && ! grep -qF -- "$expected" <<<"$output" && problem="message lacks '$expected'"
  [ -z "$problem" ] && [ -n "$(ls -A "$work/out")" ] && problem="left files behind: $(ls -A "$work/out")"
  if [ -n "$problem" ]; then
    echo "FAIL $name: $problem; output: $output"
    failed=$((failed + 1))
  else
    echo "ok   $name: $output"
    passed=$((passed + 1))
  fi
done
echo "corpus: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ] || exit 1
[ $passed -gt 0 ] || exit 77
