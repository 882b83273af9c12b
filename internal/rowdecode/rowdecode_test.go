package rowdecode

import (
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// TestOptions: B0 and the tailer get the same decoding, and the tailer's
// own RowsEventDecodeFunc (which skips tables it does not read) survives.
func TestOptions(t *testing.T) {
	var c replication.BinlogSyncerConfig
	c.UseDecimal = true
	Options(&c)
	if c.UseDecimal || !c.ParseTime || c.TimestampStringLocation != time.UTC {
		t.Errorf("UseDecimal %v, ParseTime %v, TimestampStringLocation %v: want exact decimal text and UTC times", c.UseDecimal, c.ParseTime, c.TimestampStringLocation)
	}
	if c.RowsEventDecodeFunc == nil {
		t.Error("a config without a RowsEventDecodeFunc got none: rows would be decoded with the signedness map")
	}

	called := false
	own := replication.BinlogSyncerConfig{RowsEventDecodeFunc: func(*replication.RowsEvent, []byte) error { called = true; return nil }}
	Options(&own)
	_ = own.RowsEventDecodeFunc(nil, nil)
	if !called {
		t.Error("Options replaced the caller's RowsEventDecodeFunc")
	}
}

// TestSignlessKeepsTheTableMap: the table map is shared by every rows
// event of a table and keeps its signedness for building the columns, so
// decoding must neither clear it nor leave the event pointing elsewhere.
func TestSignlessKeepsTheTableMap(t *testing.T) {
	tm := &replication.TableMapEvent{SignednessBitmap: []byte{0x80}}
	e := &replication.RowsEvent{Table: tm}
	_ = Signless(e, 0, nil) // no column data: the decode fails, the table map must not care
	if e.Table != tm || len(tm.SignednessBitmap) != 1 {
		t.Errorf("after Signless: event's table %p (want %p), bitmap %v", e.Table, tm, tm.SignednessBitmap)
	}
}
