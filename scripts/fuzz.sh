#!/usr/bin/env bash
# Runs every Fuzz target in the Go modules for FUZZTIME each (default 60s).
# `go test` can fuzz only one target of one package at a time, so the
# targets are discovered with `go test -list` and run one by one.
set -euo pipefail

fuzztime=${FUZZTIME:-60s}
found=0

# The service's module and the clients' (client/ has a go.mod of its own).
for module in . client; do
	for pkg in $(go -C "$module" list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); do
		for target in $(go -C "$module" test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
			found=$((found + 1))
			echo "=== $pkg $target ($fuzztime)"
			go -C "$module" test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"
		done
	done
done

if ((found == 0)); then
	echo "no Fuzz targets found" >&2
	exit 1
fi
echo "fuzzed $found targets for $fuzztime each"
