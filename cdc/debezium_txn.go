package cdc

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"

	"github.com/readside/readside/debezium"
)

// kafka.debezium.provide.transaction.metadata: the transaction block in
// each streamed change and BEGIN/END records on the transaction topic,
// where and as Debezium's connector writes them (package debezium counts).
// A Kafka commit falls only between source transactions, so a
// transaction's BEGIN, changes and END always commit together, and a
// restart from the checkpoint writes them again from its BEGIN: exactly
// once, like the changes.
//
// Debezium opens a transaction at MariaDB's GTID event and at MySQL's
// BEGIN query, for every transaction of the source, captured tables or
// not, and ends it at its XID or COMMIT. A DDL (MariaDB: a GTID event and
// the statement) gets a BEGIN and no END, as with the connector.

// txnMeta is the stream's transaction metadata; nil when the option is
// off.
type txnMeta struct {
	txn   debezium.Txn
	topic string
	// The debezium-avro schema ids of the topic's key and value, once
	// registered.
	registered     bool
	keyID, valueID int
}

// newTxnMeta is the stream's transaction metadata under cfg, nil when off.
func newTxnMeta(cfg Config) *txnMeta {
	k := cfg.Kafka
	if !k.Format.Debezium() || !k.Debezium.Provide.Transaction.Metadata {
		return nil
	}
	return &txnMeta{topic: k.TransactionTopic()}
}

// mysqlTxnID is the id the MySQL connector gives a transaction: its GTID,
// or without GTIDs file=<file>,pos=<pos> with pos where the binlog
// continues after the BEGIN.
func mysqlTxnID(gtid, file string, next uint32) string {
	if gtid != "" && !strings.HasPrefix(gtid, "00000000-0000-0000-0000-000000000000:") {
		return gtid
	}
	return fmt.Sprintf("file=%s,pos=%d", file, next)
}

// txnBegin opens transaction id and produces its BEGIN record.
func (s *stream) txnBegin(ctx context.Context, h *replication.EventHeader, id string) error {
	m := s.meta
	m.txn.Begin(id)
	tsMs := int64(h.Timestamp) * 1000
	if s.t.registry != nil {
		if err := s.txnSchemas(ctx); err != nil {
			return err
		}
		return s.pub.produce(ctx, newRecord(m.topic, debezium.TxnKeyAvro(nil, m.keyID, id), debezium.TxnBeginAvro(nil, m.valueID, id, tsMs), 0))
	}
	schemas := s.t.cfg.Kafka.Debezium.Schemas.Enable
	return s.pub.produce(ctx, newRecord(m.topic, debezium.TxnKey(nil, id, schemas), debezium.TxnBegin(nil, id, tsMs, schemas), 0))
}

// txnEnd produces the END record of the open transaction, committed on the
// source by the event at h (XID or COMMIT), and closes it.
func (s *stream) txnEnd(ctx context.Context, h *replication.EventHeader) error {
	m := s.meta
	if m == nil || !m.txn.Open() {
		return nil
	}
	defer m.txn.End()
	tsMs := int64(h.Timestamp) * 1000
	id := m.txn.ID()
	if s.t.registry != nil {
		// txnBegin registered the schemas.
		return s.pub.produce(ctx, newRecord(m.topic, debezium.TxnKeyAvro(nil, m.keyID, id), m.txn.TxnEndAvro(nil, m.valueID, tsMs), 0))
	}
	schemas := s.t.cfg.Kafka.Debezium.Schemas.Enable
	return s.pub.produce(ctx, newRecord(m.topic, debezium.TxnKey(nil, id, schemas), m.txn.TxnEnd(nil, tsMs, schemas), 0))
}

// txnBlock counts one change record of tbl in the open transaction and is
// its block; nil when the option is off or no transaction is open.
func (s *stream) txnBlock(tbl *table) *debezium.Block {
	if s.meta == nil || !s.meta.txn.Open() {
		return nil
	}
	b := s.meta.txn.Event(tbl.db + "." + tbl.name)
	return &b
}

// txnSchemas registers the transaction topic's Avro schemas once.
func (s *stream) txnSchemas(ctx context.Context) error {
	m := s.meta
	if m.registered {
		return nil
	}
	keyID, err := registerSchema(ctx, s.t.registry, "the transaction topic", m.topic+"-key", debezium.TxnKeyAvroSchema)
	if err != nil {
		return err
	}
	valueID, err := registerSchema(ctx, s.t.registry, "the transaction topic", m.topic+"-value", debezium.TxnValueAvroSchema)
	if err != nil {
		return err
	}
	m.keyID, m.valueID, m.registered = keyID, valueID, true
	return nil
}
