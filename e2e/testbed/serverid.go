package testbed

import (
	"math/rand/v2"
	"sync/atomic"
)

// serverIDs hands out server_ids from a random base: unique within a test
// binary by the counter, and apart from another package's binary sharing
// an external server (E2E_MYSQL_DSN) by the base. Kept clear of the small
// ids the test bed's own servers use (ServerID and those tests give StartMariaDBWith).
var serverIDs atomic.Uint32

func init() { serverIDs.Store(10_000 + rand.Uint32N(1<<30)) }

// NewServerID is a server_id no other tailer of this test run uses: a source
// kicks out a second binlog client registered under the same id.
func NewServerID() uint32 { return serverIDs.Add(1) }
