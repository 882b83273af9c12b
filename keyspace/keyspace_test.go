package keyspace

import (
	"strings"
	"testing"
)

func TestKeyRanges(t *testing.T) {
	parse := func(ss ...string) []Range {
		var out []Range
		for _, s := range ss {
			r, err := ParseRange(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	if err := CheckRanges(parse("-80", "80-")); err != nil {
		t.Error(err)
	}
	if err := CheckRanges(parse("-")); err != nil {
		t.Error(err)
	}
	if err := CheckRanges(parse("-40", "40-80", "80-c0", "c0-")); err != nil {
		t.Error(err)
	}
	if err := CheckRanges(parse("-40", "80-")); err == nil || !strings.Contains(err.Error(), "no shard covers") {
		t.Errorf("gap: %v", err)
	}
	if err := CheckRanges(parse("-80", "40-")); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlap: %v", err)
	}
	if err := CheckRanges(parse("-80")); err == nil {
		t.Error("uncovered upper half accepted")
	}
	for _, bad := range []string{"80", "zz-", "-00", "11111111111111111-"} {
		if _, err := ParseRange(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	r := parse("-80")[0]
	if !r.Contains(0x7fffffffffffffff) || r.Contains(0x8000000000000000) {
		t.Error("-80 must hold ids below 0x80… only")
	}
}
