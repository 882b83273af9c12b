// Package startup waits for what `readside run` needs before it can start
// — the source, the brokers, the sinks — and tells a server that is not up
// yet (retry) from a configuration that waiting cannot fix (exit with the
// fix).
package startup

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"

	sqldriver "database/sql/driver"

	driver "github.com/go-sql-driver/mysql"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Verdict says whether waiting can make a start-up error pass.
type Verdict int

const (
	// Permanent: a configuration error (a wrong password, an unknown
	// database, a missing grant, a bad DSN, a certificate the client
	// refuses) or an error readside does not know; exit with the fix.
	Permanent Verdict = iota
	// Transient: the server is down, unreachable, starting up, shutting
	// down or out of connections; retry.
	Transient
)

func (v Verdict) String() string {
	if v == Transient {
		return "transient"
	}
	return "permanent"
}

// MySQL and MariaDB server error numbers a server answers while it starts,
// stops or is overloaded: each passes by waiting.
var transientMySQL = map[uint16]string{
	1040: "too many connections",
	1053: "server shutdown in progress",
	1077: "normal shutdown",
	1078: "got signal, shutting down",
	1079: "shutdown complete",
	1152: "connection aborted",
	1158: "network read error",
	1159: "network read timeout",
	1160: "network write error",
	1161: "network write timeout",
	1205: "lock wait timeout",
	1213: "deadlock",
	1927: "connection killed",
	2002: "cannot connect through the socket",
	2003: "cannot connect to the server",
	2006: "server has gone away",
	2013: "lost connection during query",
}

// configFix names the fix for the server errors only a configuration
// change can pass; key is the config key the connection came from.
func configFix(num uint16, key string) string {
	switch num {
	case 1044, 1045, 1698:
		return "check the user and password in " + key + " (or its _file), and that the user may connect from this host"
	case 1049:
		return "create the database named in " + key + ", or fix its name there"
	case 1142, 1143, 1227, 1370:
		return "grant the user in " + key + " the privilege the message names (docs/operations.md, \"Grants\"), or run `readside check` for the full list"
	case 1129:
		return "the server blocked this host after connection errors: run FLUSH HOSTS on it (or raise max_connect_errors)"
	case 1251, 2059:
		return "the server asks for an authentication plugin the client does not speak: use caching_sha2_password or mysql_native_password for the user in " + key
	case 3159:
		return "the server requires TLS: enable it for " + key
	}
	return ""
}

// Classify tells a start-up error that passes by waiting from one that
// needs a configuration change. Unknown errors are Permanent: exiting with
// the error is what `run` did before it waited for anything, and a retry
// loop must not hide a bug.
func Classify(err error) Verdict {
	if err == nil {
		return Permanent
	}
	var me *driver.MySQLError
	if errors.As(err, &me) {
		if _, ok := transientMySQL[me.Number]; ok {
			return Transient
		}
		return Permanent
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		// Kafka's own retriable codes: a leader election, a broker
		// starting, a coordinator loading.
		if ke.Retriable {
			return Transient
		}
		return Permanent
	}
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var certInvalid x509.CertificateInvalidError
	var recordHeader tls.RecordHeaderError
	if errors.As(err, &unknownAuthority) || errors.As(err, &hostname) || errors.As(err, &certInvalid) || errors.As(err, &recordHeader) {
		return Permanent
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		// A name not found yet is normal while a cluster starts (a
		// Service without endpoints, a pod's DNS record not published).
		return Transient
	}
	var netErr net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EHOSTUNREACH),
		errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.ETIMEDOUT),
		errors.Is(err, syscall.EPIPE), errors.Is(err, syscall.ENOENT), // a unix socket not created yet
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, sqldriver.ErrBadConn), errors.Is(err, driver.ErrInvalidConn),
		errors.As(err, &netErr):
		return Transient
	}
	return Permanent
}

// IsConfigError reports a server's refusal that only a configuration
// change can pass (credentials, grants, an unknown database): a loop that
// retries everything else must stop on it.
func IsConfigError(err error) bool {
	var me *driver.MySQLError
	return errors.As(err, &me) && configFix(me.Number, "") != ""
}

// Fix is the message for a Permanent error of the connection configured
// under key: the error, and the fix when readside knows it.
func Fix(err error, key string) string {
	var me *driver.MySQLError
	if errors.As(err, &me) {
		if fix := configFix(me.Number, key); fix != "" {
			return fmt.Sprintf("%v. Fix: %s", err, fix)
		}
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && (errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.TransactionalIDAuthorizationFailed)) {
		return fmt.Sprintf("%v. Fix: check the credentials and ACLs of the client in %s", err, key)
	}
	return fmt.Sprintf("%v (not something waiting can fix: check %s)", err, key)
}
