package debezium

// The transaction topic under kafka.format: debezium-avro: AvroData's
// conversion of the Connect schemas in txn.go (an optional array is a
// union with null, its optional struct items unions too) and the records
// written in Avro binary, framed as every other record.

import (
	"github.com/hamba/avro/v2"
)

// TxnKeyAvroSchema is the Avro schema of the transaction topic's key,
// registered under <topic>-key.
const TxnKeyAvroSchema = `{"type":"record","name":"TransactionMetadataKey","namespace":"io.debezium.connector.common","fields":[{"name":"id","type":"string"}],` +
	`"connect.version":1,"connect.name":"io.debezium.connector.common.TransactionMetadataKey"}`

// TxnValueAvroSchema is the Avro schema of the transaction topic's value,
// registered under <topic>-value.
const TxnValueAvroSchema = `{"type":"record","name":"TransactionMetadataValue","namespace":"io.debezium.connector.common","fields":[` +
	`{"name":"status","type":"string"},{"name":"id","type":"string"},{"name":"event_count","type":["null","long"],"default":null},` +
	`{"name":"data_collections","type":["null",{"type":"array","items":["null",{"type":"record","name":"collection","namespace":"event","fields":[` +
	`{"name":"data_collection","type":"string"},{"name":"event_count","type":"long"}],"connect.version":1,"connect.name":"event.collection"}]}],"default":null},` +
	`{"name":"ts_ms","type":"long"}],"connect.version":1,"connect.name":"io.debezium.connector.common.TransactionMetadataValue"}`

// TxnKeyAvro appends the transaction topic's Avro key of transaction id,
// framed with schema id schemaID.
func TxnKeyAvro(buf []byte, schemaID int, id string) []byte {
	w := avro.NewWriter(nil, len(id)+8)
	w.WriteString(id)
	return append(appendWireHeader(buf, schemaID), w.Buffer()...)
}

// TxnBeginAvro appends the BEGIN record's Avro value (see TxnBegin).
func TxnBeginAvro(buf []byte, schemaID int, id string, tsMs int64) []byte {
	w := avro.NewWriter(nil, len(id)+32)
	w.WriteString("BEGIN")
	w.WriteString(id)
	w.WriteLong(0) // event_count: null
	w.WriteLong(0) // data_collections: null
	w.WriteLong(tsMs)
	return append(appendWireHeader(buf, schemaID), w.Buffer()...)
}

// TxnEndAvro appends the END record's Avro value of x's open transaction
// (see TxnEnd).
func (x *Txn) TxnEndAvro(buf []byte, schemaID int, tsMs int64) []byte {
	w := avro.NewWriter(nil, len(x.id)+32+32*len(x.order))
	w.WriteString("END")
	w.WriteString(x.id)
	w.WriteLong(1) // event_count: the long branch
	w.WriteLong(x.total)
	w.WriteLong(1) // data_collections: the array branch
	if cs := x.Collections(); len(cs) > 0 {
		w.WriteLong(int64(len(cs))) // one block of every item
		for _, c := range cs {
			w.WriteLong(1) // the record branch of the item's union
			w.WriteString(c.Name)
			w.WriteLong(c.Count)
		}
	}
	w.WriteLong(0) // the array's end
	w.WriteLong(tsMs)
	return append(appendWireHeader(buf, schemaID), w.Buffer()...)
}
