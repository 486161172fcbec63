#!/usr/bin/env bash
# Installs grpcurl, the third-party gRPC client e2e/grpc-reflection.spec.ts drives: it calls every
# service knowing nothing but what server reflection tells it. `go install` through the Go module
# proxy puts it in $(go env GOBIN), default $(go env GOPATH)/bin, where the test looks (after PATH).
# Does nothing when that binary is already grpcurl $VERSION, or when a grpcurl is on PATH.
set -euo pipefail

VERSION=v1.9.3
MODULE=github.com/fullstorydev/grpcurl

if ! command -v go >/dev/null 2>&1; then
  echo "install-grpcurl: Go is required to install grpcurl (or put a grpcurl on PATH)" >&2
  exit 1
fi

gobin=$(go env GOBIN)
if [ -z "$gobin" ]; then
  gobin="$(go env GOPATH | cut -d: -f1)/bin"
fi
target=$gobin/grpcurl

# `grpcurl -version` says "dev build" when built by `go install`; the module version is in the binary.
installed() {
  local info
  [ -x "$target" ] && info=$(go version -m "$target" 2>/dev/null) &&
    [[ $info == *"mod"*"$MODULE"*"$VERSION"* ]]
}

if installed; then
  echo "install-grpcurl: grpcurl $VERSION already at $target"
  exit 0
fi
if on_path=$(command -v grpcurl); then
  echo "install-grpcurl: using the grpcurl on PATH: $on_path"
  exit 0
fi

echo "install-grpcurl: go install $MODULE/cmd/grpcurl@$VERSION"
GOBIN="$gobin" go install "$MODULE/cmd/grpcurl@$VERSION"
if ! installed; then
  echo "install-grpcurl: $target is not grpcurl $VERSION after go install" >&2
  exit 1
fi
echo "install-grpcurl: installed grpcurl $VERSION at $target"
