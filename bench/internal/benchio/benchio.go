// Package benchio is what the limit programs (bench/rawparse,
// bench/rawproduce, bench/rawupsert) share with the bench driver
// (bench/cmd/benchall): the record file the driver hands them, their
// one-line JSON result, and the process's own CPU time and peak RSS.
package benchio

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/readside/readside/projections"
)

// Result is one limit measurement, printed as one JSON line on stdout. The
// field names are those of benchall's rates (docs/benchmarks.md).
type Result struct {
	PerS        float64 `json:"per_s"`
	Seconds     float64 `json:"seconds"`
	Events      int     `json:"events"` // what the rate counts (row events, records, writes)
	CPUPer1000  float64 `json:"cpu_s_per_1000"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	Load1       float64 `json:"load1"`
	Description string  `json:"description,omitempty"`
	Sweep       []Point `json:"sweep,omitempty"` // rawupsert: every batch/connection point
	// rawupsert -joins: what every point left in the read table (see
	// JoinedRows), for benchall to compare with the projector's.
	ReadRows   int64   `json:"read_rows,omitempty"`
	JoinedRows []int64 `json:"joined_rows,omitempty"`
	// rawupsert -aggregate: the checksum of the group rows it left
	// (TableChecksum; ReadRows is their count).
	Checksum int64 `json:"checksum,omitempty"`
	// rawupsert -arrays: the read rows with arrays it left, as
	// ChildrenChecksum sums them (and how many).
	ArrayRows     int64 `json:"array_rows,omitempty"`
	ArrayChecksum int64 `json:"array_checksum,omitempty"`
	// rawupsert -settle: the waits for MariaDB before each point.
	Settles []Settle `json:"settles,omitempty"`
}

// JoinedRows counts a read table's rows and, per join, the rows showing a
// parent (join version above 0): the same records must leave the same
// counts whoever applies them (rawupsert -joins, the projector).
func JoinedRows(ctx context.Context, db *sql.DB, p *projections.Projection) (rows int64, joined []int64, err error) {
	sel := "SELECT COUNT(*)"
	for _, j := range p.Joins {
		sel += fmt.Sprintf(", COALESCE(SUM(`%s` > 0), 0)", j.VersionColumn())
	}
	joined = make([]int64, len(p.Joins))
	dest := []any{&rows}
	for i := range joined {
		dest = append(dest, &joined[i])
	}
	if err := db.QueryRowContext(ctx, sel+" FROM `"+p.Table+"`").Scan(dest...); err != nil {
		return 0, nil, fmt.Errorf("counting the rows of %s: %w", p.Table, err)
	}
	return rows, joined, nil
}

// TableChecksum counts a table's rows and sums a CRC32 of each one's
// columns' text (NULL apart from every text): two tables holding the same
// values in columns of the same names have the same counts, whatever
// their column widths (rawupsert -aggregate, the projector's read table).
func TableChecksum(ctx context.Context, db *sql.DB, table string, columns []string) (rows, sum int64, err error) {
	exprs := make([]string, len(columns))
	for i, c := range columns {
		exprs[i] = "`" + c + "`"
	}
	return QueryChecksum(ctx, db, "`"+table+"`", exprs)
}

// ChildrenChecksum is TableChecksum of a children read table's columns,
// its JSON array column compacted: the same for the same arrays whatever
// the spacing of their JSON text (B2's arrays are built in Go, the
// projector's by MariaDB) and the order columns are named in.
func ChildrenChecksum(ctx context.Context, db *sql.DB, table string, columns []string, array string) (rows, sum int64, err error) {
	columns = slices.Sorted(slices.Values(columns))
	exprs := make([]string, len(columns))
	for i, c := range columns {
		exprs[i] = "`" + c + "`"
		if c == array {
			exprs[i] = "JSON_COMPACT(" + exprs[i] + ")"
		}
	}
	return QueryChecksum(ctx, db, "`"+table+"`", exprs)
}

// QueryChecksum is TableChecksum over any FROM clause and expressions
// (a read table's JSON arrays unnested with JSON_TABLE, compared with
// the plain rows of a B2).
func QueryChecksum(ctx context.Context, db *sql.DB, from string, exprs []string) (rows, sum int64, err error) {
	parts := make([]string, len(exprs))
	for i, e := range exprs {
		parts[i] = fmt.Sprintf("COALESCE(%s, '\\N')", e)
	}
	q := fmt.Sprintf("SELECT COUNT(*), COALESCE(SUM(CRC32(CONCAT_WS('|', %s))), 0) FROM %s", strings.Join(parts, ", "), from)
	if err := db.QueryRowContext(ctx, q).Scan(&rows, &sum); err != nil {
		return 0, 0, fmt.Errorf("summing the rows of %s: %w", from, err)
	}
	return rows, sum, nil
}

// Point is one batch size × connections point of the B2 sweep.
type Point struct {
	BatchRows   int     `json:"batch_rows"`
	Connections int     `json:"connections"`
	PerS        float64 `json:"per_s"`
}

// Emit prints r as one JSON line on stdout (the driver reads the last line).
func Emit(r Result) {
	r.PeakRSSMiB = PeakRSSMiB()
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}

// Fail prints the error and exits 1.
func Fail(prog string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", prog, err)
	os.Exit(1)
}

// SelfCPU is this process's user+system CPU seconds so far.
func SelfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// PeakRSSMiB is this process's peak resident set so far (getrusage maxrss).
func PeakRSSMiB() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}

// Load1 is the 1-minute load average, recorded with each measurement.
func Load1() float64 {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// The record file is the records a tailer published, in topic order per
// partition as read back: per record the topic, key and value, each a
// uvarint length and its bytes (a nil key or value has length 0), then
// the partition and the offset, each a uvarint, after a magic line. The
// partition and offset let rawupsert -joins build batches as the
// projector does (offsets, watermarks, partitions dealt to connections).
const magic = "readside-bench-records v2\n"

// WriteRecords writes recs to path.
func WriteRecords(path string, recs []*kgo.Record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(magic)
	var n [binary.MaxVarintLen64]byte
	put := func(b []byte) {
		w.Write(n[:binary.PutUvarint(n[:], uint64(len(b)))])
		w.Write(b)
	}
	for _, r := range recs {
		put([]byte(r.Topic))
		put(r.Key)
		put(r.Value)
		w.Write(n[:binary.PutUvarint(n[:], uint64(r.Partition))])
		w.Write(n[:binary.PutUvarint(n[:], uint64(r.Offset))])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadRecords reads a file written by WriteRecords.
func ReadRecords(path string) ([]*kgo.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	head := make([]byte, len(magic))
	if _, err := io.ReadFull(r, head); err != nil || string(head) != magic {
		return nil, fmt.Errorf("%s is not a record file written by this benchall (bench/internal/benchio, %q): run benchall again to write it", path, strings.TrimSpace(magic))
	}
	get := func() ([]byte, error) {
		n, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return nil, nil
		}
		b := make([]byte, n)
		_, err = io.ReadFull(r, b)
		return b, err
	}
	var recs []*kgo.Record
	for {
		topic, err := get()
		if errors.Is(err, io.EOF) {
			return recs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		key, err := get()
		if err != nil {
			return nil, fmt.Errorf("%s: truncated record: %w", path, err)
		}
		val, err := get()
		if err != nil {
			return nil, fmt.Errorf("%s: truncated record: %w", path, err)
		}
		part, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, fmt.Errorf("%s: truncated record: %w", path, err)
		}
		off, err := binary.ReadUvarint(r)
		if err != nil {
			return nil, fmt.Errorf("%s: truncated record: %w", path, err)
		}
		recs = append(recs, &kgo.Record{Topic: string(topic), Key: key, Value: val, Partition: int32(part), Offset: int64(off)})
	}
}
