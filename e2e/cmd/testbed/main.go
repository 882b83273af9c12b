// Command testbed starts the e2e test bed (MariaDB and a Kafka broker) for a
// human to poke at, and stops it again:
//
//	go run ./e2e/cmd/testbed up   [-dir .testbed] [-broker kafka|kfake] [-nodes 1|3]
//	go run ./e2e/cmd/testbed down [-dir .testbed]
//	go run ./e2e/cmd/testbed install
//
// `up` leaves the servers running in the background and writes
// <dir>/env with the E2E_* variables that point the e2e suite (or a shell)
// at them. `make testbed-up` and `make testbed-down` wrap this.
//
// `install` installs the tools tests run beside the servers (promtool,
// from Debian's prometheus package, and chromium, in which the status
// page is checked) when missing and running as root, and builds the schema
// registry (Apicurio Registry, assembled by Maven and Quarkus from
// e2e/testbed/apicurio/pom.xml) and resolves the Kafka Connect worker with
// Debezium's connectors and Apicurio's converters (bench/peers/*-pom.xml)
// into the user's cache dir when they are not there yet; `make test` runs it before the unit tests, which need
// promtool first.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "up" && os.Args[1] != "down" && os.Args[1] != "install") {
		fmt.Fprintln(os.Stderr, "usage: testbed up|down|install [-dir DIR] [-broker kafka|kfake] [-nodes N]")
		os.Exit(2)
	}
	if os.Args[1] == "install" {
		install()
		return
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", ".testbed", "directory for the servers' data, logs and env file")
	broker := fs.String("broker", "kafka", "kafka (Apache Kafka, KRaft) or kfake")
	nodes := fs.Int("nodes", 1, "number of Kafka nodes (1 or 3)")
	_ = fs.Parse(os.Args[2:])
	abs, _ := filepath.Abs(*dir)

	if os.Args[1] == "down" {
		if err := testbed.Down(abs); err != nil {
			fmt.Fprintln(os.Stderr, "testbed down:", err)
			os.Exit(1)
		}
		fmt.Println("test bed stopped and", abs, "removed")
		return
	}
	if _, err := os.Stat(filepath.Join(abs, "env")); err == nil {
		fmt.Fprintf(os.Stderr, "testbed up: %s already holds a running test bed; run `make testbed-down` first\n", abs)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bed, err := testbed.Start(ctx, testbed.Options{Dir: abs, Broker: *broker, KafkaNodes: *nodes, Detached: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testbed up:", err)
		_ = testbed.Down(abs)
		os.Exit(1)
	}
	var env string
	for _, kv := range bed.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env += "export " + k + "='" + strings.ReplaceAll(v, "'", `'\''`) + "'\n"
	}
	if err := os.WriteFile(filepath.Join(abs, "env"), []byte(env), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "testbed up:", err)
		os.Exit(1)
	}
	fmt.Printf("test bed running (%s, MariaDB at %s, Kafka at %s)\n", bed.Kafka.Version(), bed.MySQL.Addr(), strings.Join(bed.Kafka.Brokers(), ","))
	fmt.Printf("  source %s/env to point `make e2e` at it; `make testbed-down` stops it\n", abs)
	fmt.Print(env)
}

// install makes promtool, chromium, the schema registry and Kafka Connect
// with its plug-ins available.
// Not being root is no failure for the Debian packages: the tests that
// need them say so and skip (outside CI); a failed apt-get as root is,
// and so is a failed registry build, which needs no root.
func install() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	failed := false
	for _, tool := range []struct {
		name   string
		ensure func(context.Context) (string, error)
	}{{"promtool", testbed.Promtool}, {"chromium", testbed.Chromium}} {
		p, err := tool.ensure(ctx)
		switch {
		case err == nil:
			fmt.Printf("%s: %s\n", tool.name, p)
		case os.Geteuid() != 0:
			fmt.Fprintln(os.Stderr, "testbed install (skipped, not root):", err)
		default:
			fmt.Fprintln(os.Stderr, "testbed install:", err)
			failed = true
		}
	}
	start := time.Now()
	if jar, err := testbed.InstallRegistry(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "testbed install: schema registry:", err)
		failed = true
	} else {
		fmt.Printf("schema registry: %s %s (%s)\n", testbed.RegistryVersion, jar, time.Since(start).Round(time.Millisecond))
	}
	start = time.Now()
	if plugins, err := testbed.InstallConnect(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "testbed install: Kafka Connect and its plug-ins:", err)
		failed = true
	} else {
		fmt.Printf("Kafka Connect plug-ins: %s (%s)\n", plugins, time.Since(start).Round(time.Millisecond))
	}
	if failed {
		os.Exit(1)
	}
}
