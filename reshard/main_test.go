package reshard

import (
	"os"
	"testing"

	"github.com/readside/readside/e2e/testbed"
)

func TestMain(m *testing.M) { os.Exit(testbed.Main(m, testbed.Options{})) }
