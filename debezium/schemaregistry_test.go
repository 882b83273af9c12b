package debezium

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// TestVerdictOf: which registry answers are verdicts no retry changes.
func TestVerdictOf(t *testing.T) {
	cases := []struct {
		why     string
		err     error
		verdict bool
		access  bool
	}{
		{"409: the subject's compatibility refuses the schema", &sr.ResponseError{StatusCode: 409, ErrorCode: 409, Message: "incompatible"}, true, false},
		{"422: an invalid schema", &sr.ResponseError{StatusCode: 422, ErrorCode: 42201, Message: "Invalid schema"}, true, false},
		{"401: access refused, for the operator", &sr.ResponseError{StatusCode: 401}, true, true},
		{"403 likewise", &sr.ResponseError{StatusCode: 403}, true, true},
		{"503: a registry down for a moment passes", &sr.ResponseError{StatusCode: 503}, false, false},
		{"a refused connection passes", errors.New("connection refused"), false, false},
	}
	for _, c := range cases {
		err := VerdictOf("http://r:8081", "s-value", c.err)
		var v *RegistryVerdict
		if errors.As(err, &v) != c.verdict {
			t.Errorf("%s: %v: verdict %v, want %v", c.why, err, !c.verdict, c.verdict)
			continue
		}
		if c.verdict && (v.Access() != c.access || v.Subject != "s-value") {
			t.Errorf("%s: access %v subject %q, want access %v and the subject", c.why, v.Access(), v.Subject, c.access)
		}
		if !c.verdict && err != c.err {
			t.Errorf("%s: a passing error is returned as it is, got %v", c.why, err)
		}
	}
}
