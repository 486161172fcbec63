#!/usr/bin/env bash
# Builds FerretDB v1.24.2, the MongoDB-compatible server the tests use when there is no Docker
# and no MONGODB_URL. Installs it as $FERRETDB_BIN, default $(go env GOBIN) or $(go env GOPATH)/bin,
# where packages/testkit/src/global-setup.ts looks for it. Does nothing if a working one is there.
#
# Plain `go install ...@v1.24.2` is tried first. It can fail (proxy.golang.org may refuse the
# module's version list: "loading deprecation ... 403 Forbidden") and, when it builds, the binary
# panics at start because the module zip lacks build/version/version.txt. So the fallback fetches
# the module with `go get`, copies its source, writes version.txt and builds that copy.
set -euo pipefail

VERSION=v1.24.2
MODULE=github.com/FerretDB/FerretDB

if ! command -v go >/dev/null 2>&1; then
  echo "build-ferretdb: Go is required to build FerretDB (or set MONGODB_URL, or run Docker)" >&2
  exit 1
fi

gobin=$(go env GOBIN)
if [ -z "$gobin" ]; then
  gobin="$(go env GOPATH | cut -d: -f1)/bin"
fi
target=${FERRETDB_BIN:-$gobin/ferretdb}

works() {
  local reported
  # Capture first: with pipefail, `... | grep -q` fails when grep exits before the writer is done.
  [ -x "$1" ] && reported=$("$1" --version 2>/dev/null) && [[ $reported == *"version: $VERSION"* ]]
}

if works "$target"; then
  echo "build-ferretdb: FerretDB $VERSION already at $target"
  exit 0
fi

tmp=$(mktemp -d)
# The Go module cache is read-only; make our copies writable so they can be removed.
trap 'chmod -R u+w "$tmp" 2>/dev/null || true; rm -rf "$tmp"' EXIT

finish() {
  mkdir -p "$(dirname "$target")"
  install -m 0755 "$1" "$target"
  echo "build-ferretdb: installed FerretDB $VERSION at $target"
  exit 0
}

echo "build-ferretdb: go install $MODULE/cmd/ferretdb@$VERSION"
if GOBIN="$tmp/bin" go install "$MODULE/cmd/ferretdb@$VERSION" && works "$tmp/bin/ferretdb"; then
  finish "$tmp/bin/ferretdb"
fi

echo "build-ferretdb: go install did not give a working binary; building from the module source instead"
mkdir -p "$tmp/mod"
cd "$tmp/mod"
go mod init fdbbuild >/dev/null 2>&1
go get "$MODULE/cmd/ferretdb@$VERSION"
src_dir=$(go list -m -f '{{.Dir}}' "$MODULE")
if [ -z "$src_dir" ] || [ ! -d "$src_dir" ]; then
  echo "build-ferretdb: could not locate the downloaded $MODULE@$VERSION source" >&2
  exit 1
fi
cp -r "$src_dir" "$tmp/src"
chmod -R u+w "$tmp/src"
echo "$VERSION" >"$tmp/src/build/version/version.txt"
(cd "$tmp/src" && go build -o "$tmp/bin/ferretdb" ./cmd/ferretdb)
if ! works "$tmp/bin/ferretdb"; then
  echo "build-ferretdb: the built binary does not report version $VERSION:" >&2
  "$tmp/bin/ferretdb" --version >&2 || true
  exit 1
fi
finish "$tmp/bin/ferretdb"
