#!/usr/bin/env bash
# Loads TranslationService/Translate with ghz (bin/ghz, `make tools`),
# sending examples/grpc/translate-request.json, and prints the calls made,
# requests/s and the p50 and p99 latency. It exits 1 if any call failed.
#
#   scripts/load-translate.sh HOST:PORT     load a server that is running
#   scripts/load-translate.sh --serve BIN   start `BIN serve` on a free loopback
#                                           port, load it, stop it with SIGTERM
#
# Environment (defaults in brackets):
#   LOAD_DURATION [30s]       how long to send; calls in flight then finish
#   LOAD_CONCURRENCY [8]      calls in flight at once
#   LOAD_CONNECTIONS [1]      connections they share; the server allows 16
#                             calls in flight per connection
#   LOAD_REQUEST [examples/grpc/translate-request.json]
#   LOAD_REPORT               keep ghz's JSON report here (default: discarded)
#   GHZ [bin/ghz]
set -euo pipefail

cd "$(dirname "$0")/.."
ghz=${GHZ:-bin/ghz}
duration=${LOAD_DURATION:-30s}
concurrency=${LOAD_CONCURRENCY:-8}
connections=${LOAD_CONNECTIONS:-1}
request=${LOAD_REQUEST:-examples/grpc/translate-request.json}

usage() {
	echo "usage: $0 HOST:PORT | --serve TRIBUTARY_BINARY" >&2
	exit 2
}

scratch=$(mktemp -d)
server_pid=
cleanup() {
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	rm -rf "$scratch"
}
trap cleanup EXIT

case ${1:-} in
--serve)
	[[ $# -eq 2 ]] || usage
	# The server logs every call at info level, as it would in production;
	# its log goes to a file so the terminal shows only the results.
	"$2" serve --address 127.0.0.1:0 2>"$scratch/server.log" &
	server_pid=$!
	address=
	for _ in $(seq 100); do
		address=$(sed -nE 's/.*msg="serving gRPC" address=([^ ]+).*/\1/p' "$scratch/server.log")
		[[ -n $address ]] && break
		kill -0 "$server_pid" 2>/dev/null || { cat "$scratch/server.log" >&2; exit 1; }
		sleep 0.1
	done
	[[ -n $address ]] || { echo "the server did not log its address:" >&2; cat "$scratch/server.log" >&2; exit 1; }
	;;
'' | -*) usage ;;
*)
	[[ $# -eq 1 ]] || usage
	address=$1
	;;
esac

[[ -x $ghz ]] || { echo "$ghz is missing: run 'make tools'" >&2; exit 1; }

echo "ghz: Translate of $request on $address for $duration, concurrency $concurrency over $connections connection(s); $(nproc) CPUs"
# --duration-stop wait lets the calls in flight when the time is up finish:
# with ghz's default (close), they would be counted as Unavailable errors.
# The outer timeout only guards against a server that stops answering.
report=${LOAD_REPORT:-$scratch/ghz.json}
timeout 10m "$ghz" --insecure \
	--call tributary.v1.TranslationService/Translate \
	--data-file "$request" \
	--duration "$duration" --duration-stop wait \
	--concurrency "$concurrency" --connections "$connections" \
	--format json --output "$report" \
	"$address"
go run ./test/loadtest/cmd/ghzsummary <"$report"
