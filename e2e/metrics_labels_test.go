package e2e

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestHasLabels: the metrics assertions of the e2e tests pick a sample by
// its labels; a matcher that accepts the wrong sample would read another
// projection's value and pass.
func TestHasLabels(t *testing.T) {
	metric := &dto.Metric{Label: []*dto.LabelPair{
		{Name: str("projection"), Value: str("messages_by_sender")},
		{Name: str("partition"), Value: str("3")},
	}}
	cases := []struct {
		why  string
		want map[string]string
		ok   bool
	}{
		{"every wanted label present with its value", map[string]string{"projection": "messages_by_sender", "partition": "3"}, true},
		{"a subset is enough: the sample may carry more labels", map[string]string{"projection": "messages_by_sender"}, true},
		{"no wanted labels matches any sample", nil, true},
		{"another projection's sample is not this one", map[string]string{"projection": "orders_by_customer"}, false},
		{"one label right and one wrong is not a match", map[string]string{"projection": "messages_by_sender", "partition": "2"}, false},
		{"a label the sample lacks is not a match", map[string]string{"sink": "reads"}, false},
	}
	for _, c := range cases {
		if got := hasLabels(metric, c.want); got != c.ok {
			t.Errorf("%s: hasLabels(%v) = %v, want %v", c.why, c.want, got, c.ok)
		}
	}
}

func str(s string) *string { return &s }
