package projections_test

import (
	"maps"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/projector"
)

// TestTwoDeploymentsOneProjectionName: two deployments on one broker —
// each with its own kafka.topic_prefix, tailer and sink — declare the same
// projection and run on one host, so their projectors are static group
// members under the same id (kafka.group_instance_id defaults to the host
// name). Each is in its own consumer group and applies every row of its
// own topics; in one shared group, the second member would fence the
// first.
func TestTwoDeploymentsOneProjectionName(t *testing.T) {
	bed := testbed.Get(t)
	cfgA, src, sinkA := setup(t, bed)
	sinkB, err := bed.MySQL.CreateDatabase(t.Context(), "reads")
	if err != nil {
		t.Fatal(err)
	}
	cfgB := cfgA
	cfgB.Kafka.TopicPrefix = cfgA.Kafka.TopicPrefix + "b"
	cfgB.Source.ServerID = cfgA.Source.ServerID + 1
	cfgB.Sinks = maps.Clone(cfgA.Sinks)
	cfgB.Sinks["reads"] = config.Sink{DSN: config.Secret(bed.MySQL.AdminDSN() + sinkB)}
	pA, sa := prepare(t, bed, cfgA, sinkA)
	pB, sb := prepare(t, bed, cfgB, sinkB)
	t.Logf("groups %s and %s", pA.Group, pB.Group)
	runTailer(t, bed, cfgA)
	runTailer(t, bed, cfgB)
	host := "host-" + strconv.Itoa(rand.IntN(1e9))
	defer startProjectorWith(t, pA, sa, projector.Options{Brokers: cfgA.Kafka.Brokers, InstanceID: host, Log: logger()})()
	defer startProjectorWith(t, pB, sb, projector.Options{Brokers: cfgB.Kafka.Brokers, InstanceID: host, Log: logger()})()
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	writeMessages(t, bed, src, seed, 600)
	waitEqual(t, bed, "`"+src+"`.messages", "`"+sinkA+"`.messages_by_sender")
	waitEqual(t, bed, "`"+src+"`.messages", "`"+sinkB+"`.messages_by_sender")
}
