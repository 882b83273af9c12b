package cdc

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"database/sql"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/e2e/testbed"
	"github.com/readside/readside/event"
	"github.com/readside/readside/internal/sourcedb"
)

// testCA issues certificates for the TLS tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "readside test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a server certificate for 127.0.0.1 valid from notBefore to
// notAfter, and its key, under dir.
func (ca *testCA) issue(t *testing.T, dir, name string, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: notBefore, NotAfter: notAfter, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	write(t, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(t, keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
	return certFile, keyFile
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSourceTLS: with TLS on, the tailer connects and streams over TLS to
// a server whose certificate checks out, and refuses — never falling back
// to plaintext — a server with no TLS, an unknown CA, a certificate for
// another host name (verify_identity) and an expired certificate.
func TestSourceTLS(t *testing.T) {
	bed := testbed.Get(t)
	if !bed.MySQL.Private() {
		t.Skip("needs private MariaDB servers")
	}
	ctx := t.Context()
	dir := t.TempDir()
	ca, otherCA := newTestCA(t), newTestCA(t)
	caFile, otherCAFile := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "other-ca.pem")
	write(t, caFile, ca.pem)
	write(t, otherCAFile, otherCA.pem)
	certFile, keyFile := ca.issue(t, dir, "server", time.Now().Add(-time.Hour), time.Now().Add(time.Hour))

	srcDir, err := os.MkdirTemp("", "readside-tls-src-")
	if err != nil {
		t.Fatal(err)
	}
	src, err := testbed.StartMariaDB(ctx, srcDir, &testbed.TLSFiles{CA: caFile, Cert: certFile, Key: keyFile})
	t.Cleanup(func() {
		if err := src.Close(); err != nil {
			t.Errorf("closing the TLS source: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	user, pw := src.ReplCredentials()
	dsnFor := func(host string, port int) string { return fmt.Sprintf("%s:%s@tcp(%s:%d)/", user, pw, host, port) }
	connect := func(dsn string, tc config.TLS) error {
		s, err := openSource(ctx, dsn, "", tc)
		if err == nil {
			s.Close()
		}
		return err
	}
	good := config.TLS{Mode: "verify_identity", CAFile: caFile}
	if err := connect(dsnFor("127.0.0.1", src.Port), good); err != nil {
		t.Fatalf("verify_identity with the right CA: %v", err)
	}
	refusals := []struct {
		why string
		dsn string
		tc  config.TLS
	}{
		{"a server offering no TLS (plaintext is never a fallback)", bed.MySQL.ReplDSN(), good},
		{"a certificate from an unknown CA", dsnFor("127.0.0.1", src.Port), config.TLS{Mode: "verify_identity", CAFile: otherCAFile}},
		{"a certificate for another host name", dsnFor("localhost", src.Port), good},
	}
	for _, r := range refusals {
		if err := connect(r.dsn, r.tc); err == nil {
			t.Errorf("connected despite %s", r.why)
		}
	}
	// verify_ca checks the chain but not the name.
	if err := connect(dsnFor("localhost", src.Port), config.TLS{Mode: "verify_ca", CAFile: caFile}); err != nil {
		t.Errorf("verify_ca to localhost with the right CA: %v", err)
	}
	// The readers' pools (verify, the shard-key report) connect as the
	// tailer does: over TLS, refusing what it refuses.
	readerPing := func(dsn string, tc config.TLS) error {
		db, err := sourcedb.Open(dsn, sourcedb.Options{TLS: tc})
		if err != nil {
			return err
		}
		defer db.Close()
		var cipher sql.NullString
		if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(new(string), &cipher); err != nil {
			return err
		}
		if cipher.String == "" {
			return fmt.Errorf("connected in plaintext")
		}
		return nil
	}
	if err := readerPing(dsnFor("127.0.0.1", src.Port), good); err != nil {
		t.Errorf("a reader's pool, verify_identity with the right CA: %v", err)
	}
	for _, r := range refusals {
		if err := readerPing(r.dsn, r.tc); err == nil {
			t.Errorf("a reader's pool connected despite %s", r.why)
		}
	}

	// The whole tailer streams over TLS.
	db, err := src.CreateDatabase(ctx, "tls")
	if err != nil {
		t.Fatal(err)
	}
	if err := src.Exec(ctx, fmt.Sprintf("CREATE TABLE `%s`.x (id INT PRIMARY KEY)", db)); err != nil {
		t.Fatal(err)
	}
	cfg := tailerConfig(t, bed, db+".x")
	cfg.Source.DSN = config.Secret(dsnFor("127.0.0.1", src.Port))
	cfg.Source.TLS = good
	cons := newConsumer(t, bed, event.TopicFor(cfg.Kafka.TopicPrefix, db, "x"))
	stop := startTailer(t, cfg)
	deadline := time.Now().Add(60 * time.Second)
	for i := 1; ; i++ {
		if err := src.Exec(ctx, fmt.Sprintf("INSERT INTO `%s`.x VALUES (%d)", db, i)); err != nil {
			t.Fatal(err)
		}
		if fetches := pollOnce(cons, time.Second); len(fetches) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no event over TLS within 60s")
		}
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	// An expired certificate is refused too.
	expiredCert, expiredKey := ca.issue(t, dir, "expired", time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour))
	for _, f := range [][2]string{{expiredCert, certFile}, {expiredKey, keyFile}} {
		b, _ := os.ReadFile(f[0])
		write(t, f[1], b)
	}
	if err := src.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := connect(dsnFor("127.0.0.1", src.Port), good); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("expired certificate: %v", err)
	}
}

// pollOnce returns the change events fetched within d.
func pollOnce(c *consumer, d time.Duration) []testEvent {
	ctx, cancel := contextWithTimeout(c.t, d)
	defer cancel()
	return decodeFetches(c.t, c.cl.PollFetches(ctx))
}
