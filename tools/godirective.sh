#!/usr/bin/env bash
# godirective.sh: what sets the oldest go directive this module can have.
# Prints the dependencies whose go line is the highest (the floor the go
# command enforces), then, for each older Go release, what of the module's
# own code (tests included) needs a newer one: standard-library symbols
# (vet's stdversion analyzer) and language features (the type checker).
# The directive is the higher of the two floors. See
# docs/embedding-footprint.md.
# Usage: tools/godirective.sh [go1.22 go1.23 …]   (default: go1.22 to go1.25)
set -euo pipefail
cd "$(dirname "$0")/.."
export GOPROXY="${GOPROXY:-$(go env GOPROXY | sed 's/,direct$//')}"

echo "go.mod: go $(sed -n 's/^go //p' go.mod)"
echo "dependencies with the highest go line:"
# Modules old enough to have no go line are left out: they set no floor.
go list -m -f '{{if and (not .Main) .GoVersion}}{{.GoVersion}} {{.Path}}@{{.Version}}{{end}}' all | awk 'NF' | sort -V |
	awk '{split($1, p, "."); mm[NR]=p[1] "." p[2]; l[NR]=$0} END{for(i=1;i<=NR;i++) if(mm[i]==mm[NR]) print "  " l[i]}'

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
go build -o "$bin/godirective" ./tools/godirective
for v in "${@:-go1.22 go1.23 go1.24 go1.25}"; do
	for ver in $v; do
		out=$(GODIRECTIVE_GO=$ver go vet -vettool="$bin/godirective" ./... 2>&1 | grep -v '^#' || true)
		if [ -z "$out" ]; then
			echo "$ver: the code needs nothing newer"
			continue
		fi
		echo "$ver: the code needs newer (uses, count):"
		sed -E 's/.*cannot range over.*requires (go1\.[0-9]+).*/range over a function (\1)/; t; s/.*: (.+) requires (go1\.[0-9]+).*/\1 (\2)/' <<<"$out" |
			sort | uniq -c | sort -rn | sed 's/^/  /'
	done
done
