package benchio

import (
	"os"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// The settle test needs a MariaDB; the broker is the in-process one, as
// nothing here talks to Kafka.
func TestMain(m *testing.M) { os.Exit(testbed.Main(m, testbed.Options{Broker: "kfake"})) }
