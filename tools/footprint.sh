#!/usr/bin/env bash
# footprint.sh: what importing xdsconform costs a Go module that embeds the
# suites in its own tests (issue 14, item 4). For each kind of importer it
# makes a throwaway module outside the repository, pointed at a checkout
# with a replace directive, and measures:
#   packages  packages its test binary links (go list -deps -test), and how
#             many of them are outside the standard library
#   heavy     how many of those are testcontainers, moby, docker,
#             OpenTelemetry or gopsutil packages; peers how many are the
#             built-in peers' (reference server and client, go-control-plane,
#             grpc-go)
#   graph     modules in the importer's go mod graph
#   go.mod    require lines in its tidy go.mod; go.sum its lines
#   build     wall time of a cold `go test -c` (empty GOCACHE; the standard
#             library is compiled too) with its CPU time (user + system),
#             and the size of the test binary
#
# The importers (FOOTPRINT_KINDS, default every one the checkout has):
#   suite        starts a target and runs the server catalogue through
#                targets, engine, scenarios, fixture and results: what an
#                embedding test did before the conformance package
#   builtin      the same with the built-in targets opted into
#                (import _ peers/builtin)
#   conformance  conformance.RunServerSuite
#   embedded     examples/embedded copied into a module of its own, its
#                in-process go-control-plane server included
#
# Usage: tools/footprint.sh [CHECKOUT]   (default: this checkout)
#   FOOTPRINT_COLD=0 skips the cold builds, which take minutes on 2 cores;
#   FOOTPRINT_KEEP=1 keeps the modules; FOOTPRINT_VERBOSE=1 lists the
#   container-stack and peer packages linked.
# Prints one Markdown table. Timings depend on what else the machine runs.
set -euo pipefail

repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
export GOPROXY="${GOPROXY:-$(go env GOPROXY | sed 's/,direct$//')}"
export GOFLAGS="${GOFLAGS:-} -mod=mod"
mod=github.com/xdsconform/xdsconform
# The container stack, and the built-in peers (under peers/ now, at the top
# before the layout of issue 14).
heavy='testcontainers|/moby/|docker|opentelemetry|gopsutil'
peers="$mod/(peers/|refserver|refclient|gcpserver|grpcgoclient)"

# The importer's go directive: the checkout's own, the oldest it allows.
godirective=$(sed -n 's/^go //p' "$repo/go.mod")

work=$(mktemp -d)
cleanup() { if [ "${FOOTPRINT_KEEP:-0}" = 1 ]; then echo "modules kept in $work" >&2; else chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"; fi; }
trap cleanup EXIT

# suite: what an embedding test needed before the conformance package, the
# same source against either layout: it starts a target named by the
# environment, runs the server catalogue and fails on a failed rule. Its
# own management server (go-control-plane, say) is the importer's business
# and left out, so what is measured is what xdsconform adds.
suite_test() {
	cat <<'EOF'
package importer

import (
	"context"
	"os"
	"testing"

	"github.com/xdsconform/xdsconform/engine"
	"github.com/xdsconform/xdsconform/fixture"
	"github.com/xdsconform/xdsconform/results"
	"github.com/xdsconform/xdsconform/scenarios"
	"github.com/xdsconform/xdsconform/targets"
	__BLANK__
)

func TestConformance(t *testing.T) {
	target := os.Getenv("XDSCONFORM_TARGET")
	if target == "" {
		t.Skip("XDSCONFORM_TARGET is not set")
	}
	ctx := context.Background()
	srv, err := targets.StartServer(ctx, targets.ServerOptions{Target: target, Fixture: os.Getenv("XDSCONFORM_FIXTURE")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if srv.Fixture == nil && srv.Caps != nil {
		t.Fatalf("fixture API %s", fixture.APIVersion)
	}
	pairs, err := engine.Expand(scenarios.Server(), engine.Selection{})
	if err != nil {
		t.Fatal(err)
	}
	rs, _ := engine.Run(ctx, pairs, engine.Config{Env: srv})
	if s := results.Summarize(rs); !s.OK() {
		t.Fatalf("%+v", s)
	}
}
EOF
}

# conformance: the importable suite API (issue 14, item 3) run as subtests
# against a target named by the environment; as with suite, the server
# under test is left out.
conformance_test() {
	cat <<'EOF'
package importer

import (
	"os"
	"testing"

	"github.com/xdsconform/xdsconform/conformance"
	"github.com/xdsconform/xdsconform/targets"
)

func TestConformance(t *testing.T) {
	target := os.Getenv("XDSCONFORM_TARGET")
	if target == "" {
		t.Skip("XDSCONFORM_TARGET is not set")
	}
	conformance.RunServerSuite(t, conformance.ServerOptions{
		Server: targets.ServerOptions{Target: target, Fixture: os.Getenv("XDSCONFORM_FIXTURE")},
	})
}
EOF
}

kinds=${FOOTPRINT_KINDS:-}
if [ -z "$kinds" ]; then
	kinds=suite
	[ -d "$repo/peers/builtin" ] && kinds="$kinds builtin"
	[ -d "$repo/conformance" ] && kinds="$kinds conformance"
	[ -d "$repo/examples/embedded" ] && kinds="$kinds embedded"
fi

printf '| importer | packages linked (non-std) | container stack | built-in peers | modules in graph | go.mod requires | go.sum lines | cold `go test -c` | test binary |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for kind in $kinds; do
	dir="$work/$kind"
	mkdir -p "$dir"
	case $kind in
	suite) suite_test | sed '/__BLANK__/d' >"$dir/importer_test.go" ;;
	builtin) suite_test | sed "s|__BLANK__|_ \"$mod/peers/builtin\"|" >"$dir/importer_test.go" ;;
	conformance) conformance_test >"$dir/importer_test.go" ;;
	# embedded: the worked example as a module of its own, its in-process
	# go-control-plane server included: what a real importer builds.
	embedded) cp "$repo"/examples/embedded/* "$dir"/ ;;
	*) echo "footprint: unknown importer kind $kind (want suite, builtin, conformance or embedded)" >&2; exit 2 ;;
	esac
	cat >"$dir/go.mod" <<EOF
module example.com/importer

go $godirective

require $mod v0.0.0

replace $mod => $repo
EOF
	(cd "$dir" && go mod tidy >/dev/null 2>"$dir/tidy.log") || { cat "$dir/tidy.log" >&2; exit 1; }
	deps=$(cd "$dir" && go list -deps -test -f '{{if not .Standard}}{{.ImportPath}}{{end}}' . | grep -v '^example.com/importer' || true)
	all=$(cd "$dir" && go list -deps -test . | grep -vc '^example.com/importer' || true)
	nonstd=$(grep -c . <<<"$deps" || true)
	nheavy=$(grep -Ec "$heavy" <<<"$deps" || true)
	npeers=$(grep -Ec "$peers" <<<"$deps" || true)
	graph=$(cd "$dir" && go mod graph | tr ' ' '\n' | sed 's/@.*//' | sort -u | grep -vc '^example.com/importer$')
	requires=$(awk '/^require \(/{b=1;next} b&&/^\)/{b=0;next} b&&NF{n++} /^require [^(]/{n++} END{print n+0}' "$dir/go.mod")
	sum=$(wc -l <"$dir/go.sum")
	build=skipped size=-
	if [ "${FOOTPRINT_COLD:-1}" != 0 ]; then
		# The cache lives under $work, so the exit trap removes it too.
		cache="$work/gocache-$kind"
		mkdir "$cache"
		# Wall time, and the CPU time of the build (user + system), which
		# a machine busy with other work inflates far less.
		times=$( { TIMEFORMAT='%R %U %S'; time (cd "$dir" && GOCACHE="$cache" go test -c -o "$dir/importer.test" . >/dev/null 2>"$dir/build.log"); } 2>&1) ||
			{ cat "$dir/build.log" >&2; exit 1; }
		build=$(awk '{printf "%.0f s (CPU %.0f s)", $1, $2+$3}' <<<"$times")
		size=$(stat -c %s "$dir/importer.test" | awk '{printf "%.1f MB", $1/1e6}')
		chmod -R u+w "$cache"
		rm -rf "$cache"
	fi
	printf '| %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s |\n' "$kind" "$all" "$nonstd" "$nheavy" "$npeers" "$graph" "$requires" "$sum" "$build" "$size"
	if [ -n "${FOOTPRINT_VERBOSE:-}" ]; then
		grep -E "$heavy|$peers" <<<"$deps" | sed 's/^/    /' >&2 || true
	fi
done
