package config

import (
	"slices"
	"testing"
)

func TestClientBrokers(t *testing.T) {
	for _, tc := range []struct {
		why  string
		k    Kafka
		want []string
	}{
		{"configured brokers are dialled as given", Kafka{Brokers: []string{"k1:9092", "k2:9092"}, EmbeddedListen: "127.0.0.1:9092"}, []string{"k1:9092", "k2:9092"}},
		{"no brokers: the embedded broker readside run starts, at its listen address", Kafka{EmbeddedListen: "127.0.0.1:19092"}, []string{"127.0.0.1:19092"}},
	} {
		if got := tc.k.ClientBrokers(); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.why, got, tc.want)
		}
	}
}
