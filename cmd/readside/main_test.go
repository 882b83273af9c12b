package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestDispatch(t *testing.T) {
	cases := []struct {
		why      string
		args     []string
		code     int
		inStdout string
		inStderr string
	}{
		{"version prints the Go version", []string{"version"}, exitOK, "readside dev", ""},
		{"no verb is a usage error", nil, exitUsage, "", "usage: readside"},
		{"unknown verb names itself", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"replay without a projection names the flag", []string{"replay"}, exitUsage, "", "--projection is required"},
		{"verify without a config is an error (exit 2)", []string{"verify", "-c", "/nonexistent/readside.yaml"}, exitUsage, "", "readside verify:"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		if code := dispatch(c.args, &out, &errb); code != c.code {
			t.Errorf("%s: exit %d, want %d", c.why, code, c.code)
		}
		if !strings.Contains(out.String(), c.inStdout) || !strings.Contains(errb.String(), c.inStderr) {
			t.Errorf("%s: stdout %q stderr %q", c.why, out.String(), errb.String())
		}
	}
}
