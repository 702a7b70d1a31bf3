#!/usr/bin/env bash
# Regenerates fixture/fixturepb from fixture/fixturepb/fixture.proto (make
# generate). Installs what is missing first: protoc from Debian, and the Go
# plugins into bin/tools at exactly the versions the checked-in code names in
# its headers, so that regenerating an unchanged .proto changes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
PROTOC_GEN_GO=v1.36.12
PROTOC_GEN_GO_GRPC=v1.6.0
TOOLS=$PWD/bin/tools

if ! command -v protoc >/dev/null; then
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo apt-get update -qq
	$sudo apt-get install -y --no-install-recommends protobuf-compiler
fi

# plugin NAME PACKAGE VERSION installs NAME unless bin/tools has that version.
plugin() {
	local have
	have=$("$TOOLS/$1" --version 2>/dev/null || true)
	case "$have" in
	*" $3" | *" ${3#v}") ;;
	*) GOBIN=$TOOLS "$GO" install "$2@$3" ;;
	esac
}
plugin protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$PROTOC_GEN_GO"
plugin protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC"

cd fixture/fixturepb
PATH=$TOOLS:$PATH protoc -I. --go_out=. --go_opt=paths=source_relative \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative fixture.proto
echo "genproto: $(protoc --version), protoc-gen-go $PROTOC_GEN_GO, protoc-gen-go-grpc $PROTOC_GEN_GO_GRPC: regenerated fixture/fixturepb"

# Peers whose module cannot require the root one (its grpc and go-control-plane
# would raise theirs, or its own Envoy protos would clash with
# go-control-plane's) build their own copy of the generated code.
cd ../..
for d in e2e/peers/*/fixturepb; do
	[ -d "$d" ] || continue
	cp fixture/fixturepb/fixture.pb.go fixture/fixturepb/fixture_grpc.pb.go "$d/"
	echo "genproto: copied the generated code to $d"
done
