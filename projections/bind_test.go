package projections

import (
	"testing"

	"github.com/readside/readside/event"
)

// TestBindValue: how an event value becomes a sink parameter, by the
// column's type in the event's schema.
func TestBindValue(t *testing.T) {
	ev := `{"op":"c","version":1,"key":{"id":1},"before":null,"after":{"id":1,"y0":0,"y1":1901,"y2":2155,"n":0,"ny":null,"b":"AP8=","bt":5,"d":"-0.500"},` +
		`"source":{"flavor":"mariadb","server_id":1,"gtid":"0-1-1","ts_sec":1},` +
		`"schema":{"version":"v","columns":{"id":"int","y0":"year","y1":"year","y2":"year","n":"int","ny":"year","b":"varbinary","bt":"bit(8)","d":"decimal(10,3)"}}}`
	e, err := event.DecodeEvent([]byte(ev))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		why, col, want string
	}{
		{"YEAR 0 is bound as '0000': a YEAR column reads '0' as 2000", "y0", `"0000"`},
		{"four-digit years are bound as they are", "y1", `"1901"`},
		{"the last year too", "y2", `"2155"`},
		{"an INT 0 stays 0: only YEAR columns are padded", "n", `"0"`},
		{"a NULL year stays NULL", "ny", "NULL"},
		{"binary values are base64 in events, bytes in the sink", "b", "0x00ff"},
		{"bits are an unsigned integer, not the text of a number", "bt", "5"},
		{"decimals keep their exact text", "d", `"-0.500"`},
	} {
		v, err := bindValue(e.After, c.col, e)
		if err != nil || v.String() != c.want {
			t.Errorf("%s: bound %v (%v), want %s", c.why, v, err, c.want)
		}
	}
}
