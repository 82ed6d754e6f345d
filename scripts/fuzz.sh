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

failed=()
count=0
while read -r dir name; do
  count=$((count + 1))
  echo "=== fuzz $name (./$dir) for $fuzztime"
  if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "./$dir"; then
    failed+=("$name (./$dir)")
  fi
done <<<"$targets"

if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzzing found failures in: ${failed[*]}" >&2
  echo "$((count - ${#failed[@]})) passed, ${#failed[@]} failed"
  exit 1
fi
echo "$count passed, 0 failed"
