package cdc

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLz4CompressorRoundTrip: batches compressed with 64 KiB lz4 blocks
// decompress with franz-go's own decoder (what projectors and any Kafka
// client use), including batches spanning several blocks.
func TestLz4CompressorRoundTrip(t *testing.T) {
	c := newLz4Compressor()
	d := kgo.DefaultDecompressor()
	for _, n := range []int{0, 1, 1000, 64 << 10, 300_000} {
		unit := []byte(`{"op":"c","after":{"id":12345,"pad":"xxxxxxxx"}}`)
		src := bytes.Repeat(unit, n/len(unit)+1)[:n]
		var dst bytes.Buffer
		out, codec := c.Compress(&dst, src)
		if codec != kgo.CodecLz4 {
			t.Fatalf("%d bytes: codec %v", n, codec)
		}
		got, err := d.Decompress(out, kgo.CodecLz4)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("%d bytes: round trip gave %d bytes, %v", n, len(got), err)
		}
	}
}
