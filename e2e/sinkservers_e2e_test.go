package e2e

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// sinkServers are extra MariaDB servers that tests use as sink shards,
// started by the first test that asks for one and shared by the rest of
// the test binary: a server start costs seconds on the shared box, and
// the reshard tests, which need up to three, each work in databases of
// their own (CreateDatabase names are unique) and never stop or fault
// these servers. A test that faults its sink starts one of its own.
// They live under the test bed's directory, so Bed.Close stops them and
// checks that they are gone.
var sinkServers struct {
	sync.Mutex
	servers []*testbed.MySQL
}

// sinkServer returns shared sink server i (0, 1, 2, ...), started with
// server_id 101+i when first asked for.
func sinkServer(t *testing.T, i int) *testbed.MySQL {
	t.Helper()
	bed := testbed.Get(t)
	sinkServers.Lock()
	defer sinkServers.Unlock()
	for len(sinkServers.servers) <= i {
		sinkServers.servers = append(sinkServers.servers, nil)
	}
	if m := sinkServers.servers[i]; m != nil {
		return m
	}
	// The test's context only bounds the start: the server outlives it.
	m, err := testbed.StartMariaDBWith(t.Context(), filepath.Join(bed.Dir(), fmt.Sprintf("shared-sink%c", 'A'+i)), testbed.MariaDBOptions{ServerID: 101 + i})
	if err != nil {
		if m != nil {
			_ = m.Close()
		}
		t.Fatalf("starting shared sink server %c: %v", 'A'+i, err)
	}
	sinkServers.servers[i] = m
	return m
}
