package config

import (
	"log/slog"

	"github.com/go-sql-driver/mysql"
)

// Secret is a string that never prints itself: fmt, slog and JSON see the
// DSN with its password replaced, so a config dump or an error can be
// logged safely. Reveal returns the real value for the one place that
// connects.
type Secret string

const redacted = "[redacted]"

// Reveal returns the secret value.
func (s Secret) Reveal() string { return string(s) }

// String returns the value with any DSN password removed.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	cfg, err := mysql.ParseDSN(string(s))
	if err != nil {
		return redacted
	}
	if cfg.Passwd != "" {
		cfg.Passwd = "xxxxx"
	}
	return cfg.FormatDSN()
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return s.String() }

// LogValue implements slog.LogValuer.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalText keeps encoders from printing the value.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
