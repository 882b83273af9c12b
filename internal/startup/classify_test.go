package startup

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"

	sqldriver "database/sql/driver"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestClassify(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	cases := []struct {
		name string
		err  error
		want Verdict
		why  string
	}{
		{"refused", fmt.Errorf("connecting to the source: %w", refused), Transient, "the server is not listening yet"},
		{"timeout", context.DeadlineExceeded, Transient, "one attempt timed out: a host dropping packets or a slow start"},
		{"dns", &net.DNSError{Err: "no such host", Name: "mariadb", IsNotFound: true}, Transient, "a Kubernetes Service name resolves once its endpoints exist"},
		{"eof", io.ErrUnexpectedEOF, Transient, "the server closed the connection while starting or stopping"},
		{"bad conn", sqldriver.ErrBadConn, Transient, "database/sql's cut connection"},
		{"invalid conn", driver.ErrInvalidConn, Transient, "go-sql-driver's cut connection"},
		{"1040", &driver.MySQLError{Number: 1040, Message: "Too many connections"}, Transient, "connections free up"},
		{"1053", &driver.MySQLError{Number: 1053, Message: "Server shutdown in progress"}, Transient, "a restart comes back"},
		{"2013", &driver.MySQLError{Number: 2013}, Transient, "lost connection"},
		{"kafka retriable", fmt.Errorf("metadata: %w", kerr.LeaderNotAvailable), Transient, "a broker electing leaders"},
		{"1045", &driver.MySQLError{Number: 1045, Message: "Access denied for user 'rs'@'localhost' (using password: YES)"}, Permanent, "a wrong password stays wrong"},
		{"1049", &driver.MySQLError{Number: 1049, Message: "Unknown database 'x'"}, Permanent, "the database is not created by waiting"},
		{"1142", &driver.MySQLError{Number: 1142}, Permanent, "a missing table grant"},
		{"1227", &driver.MySQLError{Number: 1227}, Permanent, "a missing global privilege"},
		{"dsn", errors.New("invalid DSN: missing the slash separating the database name"), Permanent, "bad DSN syntax"},
		{"x509", fmt.Errorf("tls: %w", x509.UnknownAuthorityError{}), Permanent, "a certificate the client refuses is config"},
		{"kafka sasl", kerr.SaslAuthenticationFailed, Permanent, "bad Kafka credentials"},
		{"unknown", errors.New("something new"), Permanent, "unknown errors exit as before rather than loop"},
	}
	for _, c := range cases {
		if got := Classify(c.err); got != c.want {
			t.Errorf("%s (%s): Classify(%v) = %v, want %v", c.name, c.why, c.err, got, c.want)
		}
	}
}

func TestIsConfigError(t *testing.T) {
	cases := []struct {
		err  error
		want bool
		why  string
	}{
		{fmt.Errorf("SHOW BINLOG STATUS: %w", &driver.MySQLError{Number: 1227}), true, "a missing BINLOG MONITOR grant stops the tailer's retry loop"},
		{&driver.MySQLError{Number: 1045}, true, "a refused user after a failover is config too"},
		{&driver.MySQLError{Number: 2013}, false, "a lost connection is the retry loop's business"},
		{errors.New("binlog stream: EOF"), false, "unknown errors keep being retried by that loop"},
	}
	for _, c := range cases {
		if got := IsConfigError(c.err); got != c.want {
			t.Errorf("IsConfigError(%v) = %v, want %v (%s)", c.err, got, c.want, c.why)
		}
	}
}

func TestFixNamesKey(t *testing.T) {
	cases := []struct {
		err  error
		want string
		why  string
	}{
		{&driver.MySQLError{Number: 1045, Message: "Access denied"}, "check the user and password in source.dsn", "the operator edits the key named"},
		{&driver.MySQLError{Number: 1049, Message: "Unknown database"}, "create the database named in source.dsn", "the fix differs per error"},
		{&driver.MySQLError{Number: 1227, Message: "Access denied; you need"}, "grant the user in source.dsn", "grants are fixed on the server"},
		{errors.New("invalid DSN"), "check source.dsn", "unknown permanent errors still name the key"},
	}
	for _, c := range cases {
		if got := Fix(c.err, "source.dsn"); !strings.Contains(got, c.want) {
			t.Errorf("Fix(%v) = %q, want it to contain %q (%s)", c.err, got, c.want, c.why)
		}
	}
}
