#!/usr/bin/env bash
# Builds SeaweedFS's weed binary (the S3-compatible object store the
# tiered-storage tests start) into $(go env GOPATH)/bin, from the module
# proxy, unless that version is already there. `go install weed@version`
# is refused for this module (its go.mod has replace directives), so the
# module is downloaded and built inside its own directory, where they apply.
set -euo pipefail
WEED_VERSION="${WEED_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
bin="$(go env GOPATH)/bin"
stamp="$bin/.weed-version"
if [ -x "$bin/weed" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$WEED_VERSION" ]; then
  echo "weed $WEED_VERSION already in $bin"
  exit 0
fi
dir="$(go mod download -json "github.com/seaweedfs/seaweedfs@$WEED_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
if [ -z "$dir" ]; then
  echo "install-weed: could not download github.com/seaweedfs/seaweedfs@$WEED_VERSION" >&2
  exit 1
fi
mkdir -p "$bin"
(cd "$dir" && go build -trimpath -ldflags='-s -w' -o "$bin/weed" ./weed)
echo "$WEED_VERSION" >"$stamp"
echo "weed $WEED_VERSION built into $bin"
