package rebuild

import (
	"os"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

// The e2e tests here need only MariaDB: the in-Go broker is enough.
func TestMain(m *testing.M) { os.Exit(testbed.Main(m, testbed.Options{Broker: "kfake"})) }
