package event

import (
	"errors"
	"testing"
)

func TestCutDecodesTheTailersCheckpoint(t *testing.T) {
	body := `{"position":{"flavor":"mariadb","gtid":"0-1-42","file":"b.000001","pos":900},"written_at":"2026-11-29T06:00:00Z",` +
		`"source_ts":1795000000,"transactions":17,"published":{"p.shop.orders":{"0":12,"3":7}},"initial_load":{"started_at":"2026-11-29T05:00:00Z"},"last_version":99}`
	stored, err := SealCheckpoint([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeCut(stored)
	if err != nil {
		t.Fatal(err)
	}
	if c.Position.GTID != "0-1-42" || c.Transactions != 17 || c.SourceTS != 1795000000 || c.Published["p.shop.orders"][3] != 7 {
		t.Errorf("decoded %+v", c)
	}
	if !c.Loading() {
		t.Error("an initial load without completed_at is still loading")
	}
	garbled := append([]byte(nil), stored...)
	garbled[20] ^= 1
	if _, err := DecodeCut(garbled); !errors.Is(err, ErrCorruptCheckpoint) {
		t.Errorf("a garbled checkpoint decoded: %v", err)
	}
}
