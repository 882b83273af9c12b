// Command rawparse is limit B0 of `make bench`: go-mysql streams a binlog
// range from the source and decodes every rows event the way the tailer
// does (internal/rowdecode), rows discarded — the ceiling for anything reading the binlog
// with go-mysql on this machine. It prints one JSON line: row events per
// second of the best of -runs, its CPU per 1,000 row events and peak RSS.
//
//	go run ./rawparse -config readside.yaml -from mariadb-bin.000003:4 -to mariadb-bin.000003:91234567
//
// The source connection (the replication user) comes from the readside
// config's source.dsn; -from and -to are binlog file:offset positions
// (the binlog position before and after writing the backlog: SHOW BINARY LOG
// STATUS on MySQL >= 8.2, SHOW BINLOG STATUS on MariaDB >= 10.5.2).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"

	driver "github.com/go-sql-driver/mysql"
	"github.com/readside/readside/internal/rowdecode"

	"github.com/readside/readside/bench/internal/benchio"
	"github.com/readside/readside/config"
)

func main() {
	cfgPath := flag.String("config", "", "readside config whose source.dsn (the replication user) to read the binlog with")
	from := flag.String("from", "", "start position, binlog file:offset")
	to := flag.String("to", "", "end position, binlog file:offset (exclusive of events after it)")
	runs := flag.Int("runs", 3, "parse the range this many times and report the fastest")
	serverID := flag.Uint("server-id", 699, "replica server id (unique among the source's replicas)")
	flavor := flag.String("flavor", "", "mariadb or mysql (default: the config's source.flavor, else mariadb)")
	flag.Parse()
	if err := run(*cfgPath, *from, *to, *runs, uint32(*serverID), *flavor); err != nil {
		benchio.Fail("rawparse", err)
	}
}

func run(cfgPath, from, to string, runs int, serverID uint32, flavor string) error {
	if cfgPath == "" || from == "" || to == "" {
		return errors.New("-config, -from and -to are required (see go doc ./rawparse inside bench/)")
	}
	cfg, err := config.Load(cfgPath, nil)
	if err != nil {
		return err
	}
	dsn, err := driver.ParseDSN(cfg.Source.DSN.Reveal())
	if err != nil {
		return fmt.Errorf("source.dsn: %w", err)
	}
	host, portText, err := net.SplitHostPort(dsn.Addr)
	if err != nil {
		return fmt.Errorf("source.dsn: address %q: %w (rawparse needs tcp(host:port))", dsn.Addr, err)
	}
	port, _ := strconv.Atoi(portText)
	if flavor == "" {
		flavor = string(cfg.Source.Flavor)
	}
	if flavor == "" {
		flavor = "mariadb"
	}
	start, err := parsePos(from)
	if err != nil {
		return fmt.Errorf("-from: %w", err)
	}
	end, err := parsePos(to)
	if err != nil {
		return fmt.Errorf("-to: %w", err)
	}
	var best benchio.Result
	for range runs {
		load, cpu0 := benchio.Load1(), benchio.SelfCPU()
		t := time.Now()
		sc := replication.BinlogSyncerConfig{ServerID: serverID, Flavor: flavor, Host: host,
			Port: uint16(port), User: dsn.User, Password: dsn.Passwd}
		rowdecode.Options(&sc) // decoded exactly as the tailer decodes
		n, err := parse(context.Background(), sc, start, end)
		if err != nil {
			return err
		}
		secs := time.Since(t).Seconds()
		if best.Seconds == 0 || secs < best.Seconds {
			best = benchio.Result{Seconds: secs, Events: n, PerS: float64(n) / secs, Load1: load,
				CPUPer1000: (benchio.SelfCPU() - cpu0) / float64(max(n, 1)) * 1000, Description: fmt.Sprintf("best of %d", runs)}
		}
	}
	benchio.Emit(best)
	return nil
}

func parsePos(s string) (mysql.Position, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return mysql.Position{}, fmt.Errorf("%q is not file:offset", s)
	}
	pos, err := strconv.ParseUint(s[i+1:], 10, 32)
	if err != nil {
		return mysql.Position{}, fmt.Errorf("%q is not file:offset: %w", s, err)
	}
	return mysql.Position{Name: s[:i], Pos: uint32(pos)}, nil
}

// parse streams start..end and counts row events (an update's before and
// after image are one row event).
func parse(ctx context.Context, sc replication.BinlogSyncerConfig, start, end mysql.Position) (int, error) {
	syncer := replication.NewBinlogSyncer(sc)
	defer syncer.Close()
	st, err := syncer.StartSync(start)
	if err != nil {
		return 0, err
	}
	file, rows := start.Name, 0
	for {
		ev, err := st.GetEvent(ctx)
		if err != nil {
			return rows, err
		}
		if e, ok := ev.Event.(*replication.RowsEvent); ok {
			if e.Type() == replication.EnumRowsEventTypeUpdate {
				rows += len(e.Rows) / 2
			} else {
				rows += len(e.Rows)
			}
		}
		// A rotate event's position is in the file it ends: compare it
		// with that file before following it to the next.
		if file == end.Name && ev.Header.LogPos >= end.Pos {
			return rows, nil
		}
		if e, ok := ev.Event.(*replication.RotateEvent); ok {
			file = string(e.NextLogName)
		}
	}
}
