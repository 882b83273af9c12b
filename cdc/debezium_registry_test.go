package cdc

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/readside/readside/debezium"
)

func TestRegistryErrorClassified(t *testing.T) {
	cases := []struct {
		why   string
		err   error
		fatal bool
		want  []string
	}{
		{"an incompatible schema is the registry's verdict: it stays so until someone acts",
			&sr.ResponseError{StatusCode: 409, ErrorCode: 409, Message: "Schema being registered is incompatible with an earlier schema"}, true,
			[]string{"refused the Avro schema of d.t under subject p.d.t-value", "HTTP 409", "incompatible with an earlier schema", "nothing is lost", "Fix:", "PUT /config/p.d.t-value"}},
		{"an invalid schema likewise", &sr.ResponseError{StatusCode: 422, ErrorCode: 42201, Message: "Invalid schema"}, true,
			[]string{"HTTP 422, error code 42201", "Invalid schema"}},
		{"refused access needs the operator", &sr.ResponseError{StatusCode: 401, Message: "Unauthorized"}, true,
			[]string{"refused access", "HTTP 401", "Fix:"}},
		{"a registry down for a moment is retried", &sr.ResponseError{StatusCode: 503, Message: "unavailable"}, false,
			[]string{"registering the Avro schema of d.t under subject p.d.t-value"}},
		{"so is a refused connection", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false,
			[]string{"connection refused"}},
	}
	for _, c := range cases {
		err := registryError("d.t", "p.d.t-value", "http://r:8081", debezium.VerdictOf("http://r:8081", "p.d.t-value", c.err))
		var fatal *FatalError
		if errors.As(err, &fatal) != c.fatal {
			t.Errorf("%s: %v fatal %v, want %v", c.why, err, !c.fatal, c.fatal)
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q lacks %q", c.why, err, w)
			}
		}
	}
}
