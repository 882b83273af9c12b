// Command kfake-broker runs franz-go's kfake Kafka-protocol broker with disk
// persistence as its own process, so that the e2e suite's fast loop
// (E2E_BROKER=kfake) can kill -9 and restart it like a real broker.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 9092, "loopback port to listen on")
	dataDir := flag.String("data-dir", "", "directory for persisted topics, offsets and transactions")
	flag.Parse()
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "kfake-broker: --data-dir is required")
		os.Exit(2)
	}
	c, err := kfake.NewCluster(
		kfake.NumBrokers(1),
		kfake.Ports(*port),
		kfake.DataDir(*dataDir),
		// Every produce is fsynced, so kill -9 loses nothing acknowledged.
		kfake.SyncWrites(),
		kfake.BrokerConfigs(map[string]string{"message.max.bytes": "16777216"}),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kfake-broker: %v\n", err)
		os.Exit(1)
	}
	fmt.Println("listening on", c.ListenAddrs())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	<-sigs
	c.Close()
}
