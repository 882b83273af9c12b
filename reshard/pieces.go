package reshard

// Pieces: what a reshard has to fill. A NEW shard on a server that already
// holds part of its range for the OLD sink (the same database: a shard
// whose range does not change keeps its DSN) has those rows already, kept
// current by the live projector; only the rest of its range is filled.

import (
	"fmt"
	"math"
	"strings"

	driver "github.com/go-sql-driver/mysql"

	"github.com/readside/readside/keyspace"
)

// Shard is one shard of a sink as pieces sees it: its range and its
// server (Server).
type Shard struct {
	Range  keyspace.Range
	Server string
}

// Server identifies a MySQL server and database by a DSN: its address and
// database name (user, password and parameters do not change which rows
// it holds).
func Server(dsn string) (string, error) {
	cfg, err := driver.ParseDSN(dsn)
	if err != nil {
		return "", fmt.Errorf("sink DSN: %w", err)
	}
	return cfg.Net + "(" + cfg.Addr + ")/" + cfg.DBName, nil
}

// Piece is a key range to fill on NEW shard To, copied from (or sharing
// offsets with) the OLD shards From that hold rows of it.
type Piece struct {
	To    int            `json:"to"`
	Range keyspace.Range `json:"-"`
	Text  string         `json:"range"`
	From  []int          `json:"from"`
}

// span is an inclusive range of keyspace ids [lo, hi]: with inclusive
// bounds the top of the space needs no special case.
type span struct{ lo, hi uint64 }

func spanOf(r keyspace.Range) span {
	if r.Open {
		return span{r.Start, math.MaxUint64}
	}
	return span{r.Start, r.End - 1}
}

func (s span) overlaps(o span) bool { return s.lo <= o.hi && o.lo <= s.hi }

// minus is s without o: up to two spans.
func (s span) minus(o span) []span {
	if !s.overlaps(o) {
		return []span{s}
	}
	var out []span
	if o.lo > s.lo {
		out = append(out, span{s.lo, o.lo - 1})
	}
	if o.hi < s.hi {
		out = append(out, span{o.hi + 1, s.hi})
	}
	return out
}

// keyRange is s as a Vitess key range, its bounds in hex trimmed of
// trailing zero bytes ("c0-", "-80", "-").
func (s span) keyRange() keyspace.Range {
	bound := func(v uint64) string {
		h := fmt.Sprintf("%016x", v)
		for strings.HasSuffix(h, "00") {
			h = strings.TrimSuffix(h, "00")
		}
		return h
	}
	r := keyspace.Range{Start: s.lo, Open: s.hi == math.MaxUint64}
	start := ""
	if s.lo > 0 {
		start = bound(s.lo)
	}
	end := ""
	if !r.Open {
		r.End = s.hi + 1
		end = bound(r.End)
	}
	r.Text = start + "-" + end
	return r
}

// Pieces are the key ranges a reshard from old to new fills, in NEW shard
// order then key order: each NEW shard's range minus what OLD shards on
// its server already hold. oldAll and newAll say a shard of the sink holds
// every row whatever its range (a replicated projection).
func Pieces(old, new []Shard, oldAll, newAll bool) []Piece {
	full := span{0, math.MaxUint64}
	var out []Piece
	for j, n := range new {
		want := []span{spanOf(n.Range)}
		if newAll {
			want = []span{full}
		}
		for _, o := range old {
			if o.Server != n.Server {
				continue
			}
			held := spanOf(o.Range)
			if oldAll {
				held = full
			}
			var rest []span
			for _, w := range want {
				rest = append(rest, w.minus(held)...)
			}
			want = rest
		}
		for _, w := range want {
			p := Piece{To: j, Range: w.keyRange()}
			p.Text = p.Range.Text
			for i, o := range old {
				if oldAll || spanOf(o.Range).overlaps(w) {
					p.From = append(p.From, i)
					if oldAll {
						break // one copy holds every row
					}
				}
			}
			out = append(out, p)
		}
	}
	return out
}

// Contains reports whether a keyspace id lies in one of pieces.
func Contains(pieces []Piece, id uint64) bool {
	for _, p := range pieces {
		if p.Range.Contains(id) {
			return true
		}
	}
	return false
}
