package reshard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/readside/readside/keyspace"
)

// shards builds shards from "range@server" items.
func shards(t *testing.T, spec string) []Shard {
	t.Helper()
	var out []Shard
	for _, item := range strings.Split(spec, ",") {
		rng, server, _ := strings.Cut(item, "@")
		r, err := keyspace.ParseRange(rng)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Shard{Range: r, Server: server})
	}
	return out
}

// render is pieces as "to:range<from" items.
func render(ps []Piece) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%d:%s<%v", p.To, p.Text, p.From))
	}
	return strings.Join(out, " ")
}

func TestPieces(t *testing.T) {
	for _, tc := range []struct {
		name, why      string
		old, new       string
		oldAll, newAll bool
		want           string
	}{
		{name: "split 2→3", why: "c0- is on a new server: filled from 80-; -80 and 80-c0 stay where they are",
			old: "-80@a,80-@b", new: "-80@a,80-c0@b,c0-@c", want: "2:c0-<[1]"},
		{name: "1→2", why: "the new server of 80- gets that half from the one shard",
			old: "-@a", new: "-80@a,80-@b", want: "1:80-<[0]"},
		{name: "merge", why: "the -80 server keeps its half and gets 80- from the other",
			old: "-80@a,80-@b", new: "-@a", want: "0:80-<[1]"},
		{name: "merge across two sources", why: "a piece spanning two OLD shards names both",
			old: "-40@a,40-80@b,80-@c", new: "-@a", want: "0:40-<[1 2]"},
		{name: "identical", why: "same ranges on the same servers: nothing moves",
			old: "-80@a,80-@b", new: "-80@a,80-@b", want: ""},
		{name: "all new servers", why: "no server shared: every range is a piece, from the OLD shards it overlaps",
			old: "-80@a,80-@b", new: "-40@c,40-@d", want: "0:-40<[0] 1:40-<[0 1]"},
		{name: "middle hole", why: "a server holding the middle of a range gets both ends",
			old: "-40@a,40-80@b,80-@c", new: "-@b", want: "0:-40<[0] 0:80-<[2]"},
		{name: "replicated→sharded", why: "a replicated OLD shard holds every row: its server needs nothing, a new server copies from one OLD shard",
			old: "-80@a,80-@b", new: "-80@a,80-c0@b,c0-@c", oldAll: true, want: "2:c0-<[0]"},
		{name: "sharded→replicated", why: "a replicated NEW shard needs the whole space beyond what its server held",
			old: "-80@a,80-@b", new: "-80@a,80-@c", newAll: true, want: "0:80-<[1] 1:-<[0 1]"},
		{name: "odd bounds", why: "bounds print as Vitess does, trailing zero bytes trimmed",
			old: "-@a", new: "-1234@a,1234-@b", want: "1:1234-<[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := render(Pieces(shards(t, tc.old), shards(t, tc.new), tc.oldAll, tc.newAll))
			if got != tc.want {
				t.Errorf("%s\nPieces(%s → %s) = %q, want %q", tc.why, tc.old, tc.new, got, tc.want)
			}
		})
	}
}

func TestPieceRangesParse(t *testing.T) {
	// A piece's text parses back to the same range, so it can name the
	// range in progress and in verify's output.
	for _, p := range Pieces(shards(t, "-40@a,40-80@b,80-@c"), shards(t, "-@b"), false, false) {
		r, err := keyspace.ParseRange(p.Text)
		if err != nil || r != p.Range {
			t.Errorf("keyspace.ParseRange(%q) = %+v, %v; want %+v", p.Text, r, err, p.Range)
		}
	}
}

func TestServer(t *testing.T) {
	// Credentials and parameters do not make another server.
	a, _ := Server("u:p@tcp(h:3306)/db?parseTime=true")
	b, _ := Server("other:x@tcp(h:3306)/db")
	c, _ := Server("u:p@tcp(h:3307)/db")
	if a != b || a == c {
		t.Errorf("Server: %q %q %q", a, b, c)
	}
}
