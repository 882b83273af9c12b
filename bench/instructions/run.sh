#!/usr/bin/env bash
# Instructions per event of readside's CPU hot paths, counted by
# valgrind's callgrind: the same count for the same binary and input
# whatever else the machine is doing, so a change to a hot path can be
# compared before/after on a noisy shared box, where drain rates swing by
# ±30% between runs (docs/benchmarks.md, "Instructions per event").
#
#   make bench-instructions                       # this tree
#   make bench-instructions REF=HEAD~1            # this tree and another commit, side by side
#
# Each benchmark runs once with 1 iteration and once with N; the
# difference over N-1 is the count per iteration without the set-up.
# Go's async preemption signals confuse callgrind, hence
# GODEBUG=asyncpreemptoff=1; GOMAXPROCS=1 keeps the count to one thread's
# order of events (garbage collection is counted, so counts move by ~1%
# between runs).
set -euo pipefail
cd "$(dirname "$0")/../.."

if ! command -v valgrind >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		apt-get update -qq && apt-get install -y -qq valgrind >/dev/null
	else
		echo "valgrind is not installed (Debian package valgrind)" >&2
		exit 1
	fi
fi

# package:benchmark:iterations:events per iteration:what an event is
BENCHES=(
	"./event:DecodeEvent\$:20000:1:a narrow update event decoded (DecodeEvent)"
	"./event:DecodeEventWide\$:20000:1:a wide insert event (~1.2 KB of row) decoded (DecodeEvent)"
	"./projections:Build\$:10:5000:a narrow insert record of a 5,000-record poll built into its batch (decode, writes, coalescing)"
	"./projections:BuildComputed\$:10:5000:the same record mapped by a projection with a month-bucket key, computed columns and an expression filter"
	"./cdc:AppendChange\$:20000:1:a narrow insert's key and envelope encoded by the tailer (from go-mysql's decoded row)"
	"./debezium:JSONEncode\$:20000:1:a narrow insert's key and value in kafka.format: debezium (JSON with schemas, from readside's values)"
	"./debezium:AvroEncode\$:20000:1:the same in kafka.format: debezium-avro (Avro written from readside's values)"
	"./sinks:AppendUpsert\$:10:5000:a narrow insert's row written into the sink's 5,000-row upsert statement (values as Build makes them)"
)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

count() { # binary regex iterations -> instructions of the whole run
	GODEBUG=asyncpreemptoff=1 GOMAXPROCS=1 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
		"$1" -test.run '^$' -test.bench "$2" -test.benchtime "${3}x" 2>&1 |
		awk '/Collected/ {print $4}'
}

measure() { # tree label
	local tree=$1 label=$2
	for b in "${BENCHES[@]}"; do
		IFS=: read -r pkg re n per what <<<"$b"
		local bin="$work/$label-$(basename "$pkg").test"
		[ -x "$bin" ] || (cd "$tree" && go test -c -o "$bin" "$pkg")
		if ! "$bin" -test.list "Benchmark$re" | grep -q '^Benchmark'; then
			echo "$label: no benchmark Benchmark$re in $pkg" >&2
			continue
		fi
		local one many
		one=$(count "$bin" "Benchmark$re" 1)
		many=$(count "$bin" "Benchmark$re" "$n")
		if [ -z "$one" ] || [ -z "$many" ]; then
			echo "$label: $re: callgrind gave no count" >&2
			continue
		fi
		printf '%-10s %-16s %8d instructions per event: %s\n' "$label" "${re%\$}" $(((many - one) / (n - 1) / per)) "$what"
	done
}

measure . "$(git rev-parse --short HEAD)$(git diff --quiet || echo +)"
if [ -n "${REF:-}" ]; then
	git worktree add -q --detach "$work/ref" "$REF"
	trap 'git worktree remove --force "$work/ref"; rm -rf "$work"' EXIT
	measure "$work/ref" "$REF"
fi
