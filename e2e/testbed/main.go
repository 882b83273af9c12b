package testbed

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
)

// shared is the test bed of the current test binary, set by Main. It is the
// one piece of package state in the test bed: TestMain owns its lifetime.
var shared *Bed

// Main is the body of an e2e package's TestMain: it starts the test bed
// when the environment asks for e2e tests, runs the tests and cleans up.
// A test bed that cannot start fails the run loudly.
//
//	func TestMain(m *testing.M) { os.Exit(testbed.Main(m, testbed.Options{})) }
func Main(m *testing.M, opts Options) int {
	if !Enabled() {
		fmt.Println("e2e: skipping tests that need MariaDB and Kafka; run `make e2e` (or set E2E=1) to start the test bed")
		return m.Run()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bed, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: the test bed did not start: %v\n", err)
		if cerr := bed.Close(); cerr != nil {
			fmt.Fprintf(os.Stderr, "e2e: cleaning up: %v\n", cerr)
		}
		return 1
	}
	shared = bed
	code := m.Run()
	if err := bed.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: test bed cleanup failed: %v\n", err)
		code = 1
	}
	return code
}

// Get returns the running test bed, or skips the test when e2e tests are
// not enabled. It also starts recording the test's wall time when
// $E2E_TIMES names a file (see TimesEnv).
func Get(t testing.TB) *Bed {
	t.Helper()
	if shared == nil {
		t.Skip("e2e: needs MariaDB and Kafka; run `make e2e` (or set E2E=1)")
	}
	recordTime(t)
	return shared
}
