// Package compression is the codec of the tailer's record batches
// (kafka.compression), shared with bench's raw produce limit B1 so that B1
// compresses exactly like the tailer. Internal: nothing outside readside's
// own modules uses it.
package compression

import (
	"bytes"
	"sync"

	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/config"
)

// Option is the producer option for kafka.compression (validated by
// config).
func Option(name config.Compression) kgo.Opt {
	switch name {
	case config.CompressionLZ4:
		return kgo.WithCompressor(newLz4Compressor())
	case config.CompressionSnappy:
		return kgo.ProducerBatchCompression(kgo.SnappyCompression())
	case config.CompressionZstd:
		return kgo.ProducerBatchCompression(kgo.ZstdCompression())
	case config.CompressionGzip:
		return kgo.ProducerBatchCompression(kgo.GzipCompression())
	}
	return kgo.ProducerBatchCompression(kgo.NoCompression())
}

// lz4Compressor is franz-go's lz4 with 64 KiB frame blocks. franz-go's own
// pools writers with lz4's default 4 MiB blocks, each holding its block
// buffers: with a batch per partition compressed at once that took the
// tailer of a 500,000-row transaction from 132 MiB (snappy) to 142–165
// MiB peak. Every Kafka client reads any LZ4 frame block size.
//
// Frames carry no content checksum, like Kafka's own Java producer
// writes them: the record batch's CRC-32C already covers the compressed
// bytes, and the xxHash of every batch was 3% of the tailer's CPU on a
// backlog drain (bench/results/history/tuning-log.md, entry 26).
type lz4Compressor struct{ pool sync.Pool }

func newLz4Compressor() *lz4Compressor {
	return &lz4Compressor{pool: sync.Pool{New: func() any {
		w := lz4.NewWriter(nil)
		_ = w.Apply(lz4.BlockSizeOption(lz4.Block64Kb), lz4.CompressionLevelOption(lz4.Fast), lz4.ChecksumOption(false))
		return w
	}}}
}

func (c *lz4Compressor) Compress(dst *bytes.Buffer, src []byte, _ ...kgo.CompressFlag) ([]byte, kgo.CompressionCodecType) {
	w := c.pool.Get().(*lz4.Writer)
	defer c.pool.Put(w)
	w.Reset(dst)
	if _, err := w.Write(src); err != nil {
		return nil, kgo.CodecError
	}
	if err := w.Close(); err != nil {
		return nil, kgo.CodecError
	}
	return dst.Bytes(), kgo.CodecLz4
}
