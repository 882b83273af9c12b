package cdc

import (
	"errors"
	"fmt"
	"testing"

	driver "github.com/go-sql-driver/mysql"
)

// isRequestError decides between skipping a snapshot request and retrying
// it: a wrong answer either poisons the tailer or drops a good request.
func TestIsRequestError(t *testing.T) {
	for _, c := range []struct {
		why  string
		err  error
		want bool
	}{
		{"unknown column in --where: the request is wrong", &driver.MySQLError{Number: 1054}, true},
		{"table dropped after the request", &driver.MySQLError{Number: 1146}, true},
		{"where that does not parse", &driver.MySQLError{Number: 1064}, true},
		{"SELECT not granted on the table", &driver.MySQLError{Number: 1142}, true},
		{"wrapped, as the stream sees it", fmt.Errorf("chunk: %w", &driver.MySQLError{Number: 1054}), true},
		{"table gone when its columns are read", fmt.Errorf("snapshot: %w", &unsnapshottable{"table d.t does not exist"}), true},
		{"lock wait timeout: retry", &driver.MySQLError{Number: 1205}, false},
		{"server shutting down: retry", &driver.MySQLError{Number: 1053}, false},
		{"connection lost (not a server error): retry", driver.ErrInvalidConn, false},
		{"any other error: retry", errors.New("i/o timeout"), false},
	} {
		if got := isRequestError(c.err); got != c.want {
			t.Errorf("%s: isRequestError(%v) = %v, want %v", c.why, c.err, got, c.want)
		}
	}
}
