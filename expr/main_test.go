package expr_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// server is the test bed's MariaDB when E2E=1 (the differential tests
// need no broker, so only MariaDB starts).
var server *testbed.MySQL

func TestMain(m *testing.M) {
	if !testbed.Enabled() {
		fmt.Println("e2e: skipping the differential tests that need MariaDB; run `make e2e` (or set E2E=1)")
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "readside-expr-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	server, err = testbed.StartMariaDB(context.Background(), dir, nil)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: MariaDB did not start: %v\n", err)
		if server != nil {
			_ = server.Close()
		}
		os.Exit(1)
	}
	code := m.Run()
	if err := server.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: stopping MariaDB: %v\n", err)
		code = 1
	}
	os.Exit(code)
}
