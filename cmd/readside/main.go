// Command readside tails a MySQL/MariaDB binlog into Kafka and keeps read
// models in MySQL up to date. See README.md and docs/ for the whole story.
//
// main only wires: it parses the verb and flags and hands off to the
// packages that do the work.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// Exit codes, documented in docs/operations.md ("Exit codes").
const (
	exitOK      = 0
	exitProblem = 1 // the command ran and found a problem (drift, check failures)
	exitUsage   = 2 // bad invocation or an error before the work could start
)

// version and commit are set by the Makefile with -ldflags -X.
var (
	version = "dev"
	commit  = ""
)

type verb struct {
	name     string
	summary  string   // one line: what the command does
	synopsis string   // the arguments after the verb in the usage line
	examples []string // command lines shown under "example:"
	run      func(args []string, stdout, stderr io.Writer) int
}

func verbs() []verb {
	return []verb{
		{"run", "the daemon: tail the binlog into Kafka and keep the read tables up to date",
			"[-c FILE] [--role all|tailer|projector] [--http ADDR]",
			[]string{"readside run -c readside.yaml --http :9100"}, runDaemon},
		{"check", "validate the config against the live source, broker and sinks; list every problem",
			"[-c FILE] [-q]",
			[]string{"readside check -c readside.yaml"}, runCheck},
		{"plan", "print (or --apply) the DDL of every read table and readside's own tables",
			"[-c FILE] [--apply]",
			[]string{"readside plan -c readside.yaml > plan.sql", "readside plan -c readside.yaml --apply"}, runPlan},
		{"snapshot", "online, lock-free snapshot of a table's existing rows into the topics",
			"[-c FILE] (--table DB.TABLE [--where SQL] [--wait|--cancel]|--pending)",
			[]string{"readside snapshot -c readside.yaml --table shop.orders --where \"created_at > '2026-01-01'\"", "readside snapshot -c readside.yaml --table shop.orders --wait", "readside snapshot -c readside.yaml --table shop.orders --cancel", "readside snapshot -c readside.yaml --pending"}, runSnapshot},
		{"replay", "re-apply history to a projection, --rebuild its table or --backfill added columns",
			"[-c FILE] --projection P (--from POS|--rebuild|--backfill COLS|...)",
			[]string{"readside replay -c readside.yaml --projection orders_by_customer --from 2026-11-24T09:00:00Z", "readside replay -c readside.yaml --projection orders_by_customer --backfill status,total"}, runReplay},
		{"verify", "compare read tables with what the source implies (--repair fixes drift)",
			"[-c FILE] [--projection NAME] [--repair]",
			[]string{"readside verify -c readside.yaml --projection orders_by_customer --repair"}, runVerify},
		{"reshard", "move a projection to a sink with other key ranges online, with a fenced cutover",
			"[-c FILE] --projection P --sink NEW --to RANGES [--fill F] [--cleanup]",
			[]string{"readside reshard -c readside.yaml --projection orders_by_customer --sink reads3 --to -80,80-c0,c0-"}, runReshard},
		{"shards", "analyze: how a projection's rows spread over shards (skew, hot values, moves)",
			"analyze [-c FILE] --projection P [--by EXPR] [--all] [--to RANGES] [--json]",
			[]string{"readside shards analyze -c readside.yaml --projection orders_by_customer --to -40,40-80,80-c0,c0-"}, runShards},
		{"status", "positions, lag and health per projection, from the daemon or else from the stores",
			"[-c FILE] [--http ADDR] [--json]",
			[]string{"readside status -c readside.yaml"}, runStatus},
		{"version", "print the version, commit and Go version",
			"",
			[]string{"readside version"}, runVersion},
	}
}

func main() { os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr)) }

func dispatch(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		writeUsage(stderr)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		writeUsage(stdout)
		return exitOK
	case "help":
		if len(args) > 1 {
			return dispatch([]string{args[1], "--help"}, stdout, stderr)
		}
		writeUsage(stdout)
		return exitOK
	}
	for _, v := range verbs() {
		if v.name == args[0] {
			return v.run(args[1:], stdout, stderr)
		}
	}
	if strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "readside: %s before a command: flags follow the command, e.g. readside run -c readside.yaml\n\n", args[0])
	} else {
		fmt.Fprintf(stderr, "readside: unknown command %q\n\n", args[0])
	}
	writeUsage(stderr)
	return exitUsage
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	if code, done := parseFlags(newFlagSet("version"), args, stdout, stderr); done {
		return code
	}
	c := commit
	if c == "" {
		if info, ok := debug.ReadBuildInfo(); ok {
			for _, s := range info.Settings {
				if s.Key == "vcs.revision" {
					c = s.Value
				}
			}
		}
	}
	if c == "" {
		c = "unknown"
	}
	fmt.Fprintf(stdout, "readside %s (commit %s, %s %s/%s)\n", version, c, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return exitOK
}
