#!/usr/bin/env bash
# One reproducer of bad input (tests/reproducers/README.md), run as a user would:
#   run.sh COLLSIM CASE_DIR [--sanitized]
# In a fresh copy of CASE_DIR: its `setup` (if any), then `collsim $(cat command)`.
# Passes when collsim exits 2 within the time limit and the memory limit, prints
# nothing on stdout and exactly one line on stderr containing the text of `expect`,
# and leaves the folder as it found it (nothing written, nothing left behind).
set -uo pipefail
collsim=$1 case_dir=$2 sanitized=${3:-}
seconds=10
[[ $sanitized == --sanitized ]] && seconds=120  # ASan/UBSan at -O0: slower, and no address-space limit
work=$(mktemp -d "${TMPDIR:-/tmp}/collsim-repro.XXXXXX")
trap 'rm -rf "$work"' EXIT
cp -r "$case_dir"/. "$work"/
cd "$work"
fail() { echo "reproducer $(basename "$case_dir"): $*" >&2; exit 1; }
if [[ -f setup ]]; then bash setup || fail "its setup failed"; fi
before=$(find . -mindepth 1 -printf '%p %s\n' | sort)
read -r -a args < command
(
  # 2 GiB of address space (the issue's bound), except under ASan, which reserves terabytes.
  [[ $sanitized == --sanitized ]] || ulimit -v $((2 * 1024 * 1024))
  exec timeout --signal=KILL "$seconds" "$collsim" "${args[@]}" > stdout 2> stderr
)
status=$?
expect=$(cat expect)
[[ $status == 137 ]] && fail "killed after $seconds s (a hang or unbounded work)"
[[ $status == 2 ]] || { cat stderr >&2; fail "exit status $status, expected 2"; }
[[ -s stdout ]] && { head -c 2000 stdout >&2; fail "printed on stdout"; }
lines=$(wc -l < stderr)
[[ $lines == 1 ]] || { cat stderr >&2; fail "$lines lines on stderr, expected one"; }
grep -qF -- "$expect" stderr || { cat stderr >&2; fail "stderr does not contain: $expect"; }
rm -f stdout stderr
after=$(find . -mindepth 1 -printf '%p %s\n' | sort)
[[ $before == "$after" ]] || fail "the folder changed: $(diff <(echo "$before") <(echo "$after") | head -5)"
