package compression

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestLz4CompressorRoundTrip: batches compressed with 64 KiB lz4 blocks
// decompress with franz-go's own decoder (what projectors and any Kafka
// client use), including batches spanning several blocks. The frames carry
// no content checksum (the record batch's CRC covers them), like the Java
// producer's.
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
		// The frame descriptor's FLG byte follows the 4-byte magic; bit 2 is
		// the content checksum flag.
		if len(out) < 5 || out[4]&0x04 != 0 {
			t.Fatalf("%d bytes: frame header % x sets a content checksum", n, out[:min(len(out), 7)])
		}
		got, err := d.Decompress(out, kgo.CodecLz4)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("%d bytes: round trip gave %d bytes, %v", n, len(got), err)
		}
	}
}
