package testbed

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TimesEnv names the file every test that uses the test bed appends its
// wall time to ("seconds<TAB>package<TAB>test" lines), so `make e2e` can
// print the slowest tests of the run whatever their package: the suite has
// a fixed budget, and a test that grows slow must show before it breaks it.
const TimesEnv = "E2E_TIMES"

// timed holds the tests (keyed by their testing.TB) whose time is already
// being recorded: helpers call Get more than once per test, and one line
// per test is wanted.
var timed sync.Map

// recordTime appends t's wall time, from its first Get to the end of its
// cleanups registered after that (servers and daemons it stopped), to
// $E2E_TIMES. Writing is best effort: a times file that cannot be written
// must not fail the test it measures.
func recordTime(t testing.TB) {
	path := os.Getenv(TimesEnv)
	if path == "" {
		return
	}
	if _, loaded := timed.LoadOrStore(t, true); loaded {
		return
	}
	start := time.Now()
	t.Cleanup(func() {
		line := fmt.Sprintf("%.1f\t%s\t%s\n", time.Since(start).Seconds(), timesPackage(path), t.Name())
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return
		}
		// One write per line under O_APPEND: parallel tests' lines do not
		// interleave.
		_, _ = f.WriteString(line)
		_ = f.Close()
	})
}

// timesPackage is the test's package directory relative to the times
// file's directory (the checkout, in `make e2e`): go test runs a package's
// tests in its directory.
func timesPackage(path string) string {
	wd, err := os.Getwd()
	if err != nil {
		return "?"
	}
	if rel, err := filepath.Rel(filepath.Dir(path), wd); err == nil {
		return rel
	}
	return wd
}
