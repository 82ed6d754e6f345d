#!/usr/bin/env bash
# Runs every fuzz target in the module (each `func FuzzXxx` in a
# *_test.go file) for FUZZTIME (default 30s), one after another, and
# exits non-zero if any of them found a failure. A failing input is
# written by `go test` to the package's testdata/fuzz/<FuzzName>/, where
# plain `go test` replays it from then on: commit it with the fix.
#
#   scripts/fuzz.sh                 # 30 s per target (make fuzz)
#   FUZZTIME=5s scripts/fuzz.sh     # the short CI pass
#   scripts/fuzz.sh FuzzIterate     # only targets matching a pattern
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-30s}"
pattern="${1:-.}"

targets=$(grep -r --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' . |
  sed -E 's|^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)$|\1 \2|' |
  grep -E -- "$pattern" | sort -u)
if [ -z "$targets" ]; then
  echo "no fuzz targets match $pattern" >&2
  exit 2
fi

# fuzz_once runs one target and classifies the result: 0 passed, 1 a real
# finding (a failing input written, a panic, a t.Error), 3 the Go
# toolchain's -fuzztime shutdown race (golang/go#75804, fixed in Go 1.27):
# a bare "context deadline exceeded" with no failing input, which says
# nothing about our code.
fuzz_once() {
  local dir=$1 name=$2 out rc=0
  out=$(mktemp)
  go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "./$dir" 2>&1 | tee "$out" || rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ] && grep -q 'context deadline exceeded' "$out" &&
    ! grep -qE 'Failing input written|panic:|_test\.go:[0-9]+:' "$out"; then
    rc=3
  elif [ "$rc" -ne 0 ]; then
    rc=1
  fi
  rm -f "$out"
  return "$rc"
}

failed=()
flaked=()
count=0
while read -r dir name; do
  count=$((count + 1))
  echo "=== fuzz $name (./$dir) for $fuzztime"
  rc=0
  fuzz_once "$dir" "$name" || rc=$?
  if [ "$rc" = 3 ]; then
    echo "=== $name: toolchain fuzztime race (no failing input); running it again"
    rc=0
    fuzz_once "$dir" "$name" || rc=$?
  fi
  case "$rc" in
    0) ;;
    3) flaked+=("$name (./$dir)") ;;
    *) failed+=("$name (./$dir)") ;;
  esac
done <<<"$targets"

if [ "${#flaked[@]}" -gt 0 ]; then
  echo "WARNING: hit the toolchain's fuzztime race twice, no failing input: ${flaked[*]}" >&2
fi

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzzing found failures in: ${failed[*]}" >&2
  echo "$((count - ${#failed[@]})) passed, ${#failed[@]} failed"
  exit 1
fi
echo "$count passed, 0 failed"
