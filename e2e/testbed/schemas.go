package testbed

import (
	"context"
	"fmt"

	"github.com/readside/readside/config"
)

// The shop schema: customers and their orders, the shape of a joined
// projection (orders re-keyed by customer, carrying the customer's name
// and tier). Each column type is there for a reason: a utf8mb4 name, a
// nullable ENUM, a DATETIME(6) in the key's neighbourhood, and an index on
// the join column so the fan-out's reads are indexed at the source.
const (
	shopCustomers = "CREATE TABLE `%s`.customers (id INT PRIMARY KEY, name VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL, tier ENUM('free','pro','vip') NULL)"
	shopOrders    = "CREATE TABLE `%s`.orders (id INT PRIMARY KEY, customer_id INT NOT NULL, status VARCHAR(20) NOT NULL, total_cents BIGINT NOT NULL, created_at DATETIME(6) NOT NULL, KEY (customer_id))"
)

// CreateShop creates the shop schema's tables in database db on m and
// returns their qualified names, for source.tables.
func CreateShop(ctx context.Context, m *MySQL, db string) ([]string, error) {
	if err := m.Exec(ctx, fmt.Sprintf(shopCustomers, db), fmt.Sprintf(shopOrders, db)); err != nil {
		return nil, err
	}
	return []string{db + ".customers", db + ".orders"}, nil
}

// OrdersByCustomer is the shop's joined projection from database db into
// sink: orders not in draft, keyed and sharded by customer, with the
// customer's name and tier copied in.
func OrdersByCustomer(db, sink string) config.Projection {
	return config.Projection{
		From: db + ".orders", Sink: sink, Key: []string{"customer_id", "id"}, ShardBy: "customer_id",
		Columns: orderColumns(),
		Where:   "status <> 'draft'",
		Join:    []config.Join{customerJoin(db)},
	}
}

// OrdersByID is OrdersByCustomer keyed by the order id alone, so an order
// moving to another customer changes the join column in place rather than
// moving the key.
func OrdersByID(db, sink string) config.Projection {
	return config.Projection{
		From: db + ".orders", Sink: sink, Key: []string{"id"}, ShardBy: "id",
		Columns: orderColumns(),
		Join:    []config.Join{customerJoin(db)},
	}
}

func orderColumns() map[string]string {
	return map[string]string{"id": "id", "customer_id": "customer_id", "status": "status", "total_cents": "total_cents", "created_at": "created_at"}
}

func customerJoin(db string) config.Join {
	return config.Join{From: db + ".customers", On: map[string]string{"id": "customer_id"},
		Columns: map[string]string{"customer_name": "name", "customer_tier": "tier"}}
}

// The chat schema: one messages table, the shape of a re-keyed projection
// (messages by sender, ordered by time). The body is nullable so NULLs
// travel; created_at has microseconds so the key's order is exact.
const chatMessages = "CREATE TABLE `%s`.messages (id INT PRIMARY KEY, sender_id INT NOT NULL, created_at DATETIME(6) NOT NULL, body VARCHAR(100))"

// CreateChat creates the chat schema's messages table in database db on m
// and returns its qualified name, for source.tables.
func CreateChat(ctx context.Context, m *MySQL, db string) (string, error) {
	return db + ".messages", m.Exec(ctx, fmt.Sprintf(chatMessages, db))
}

// ChatProjectionYAML is the chat's projection messages_by_sender from
// database db into the sink named reads, as config YAML under projections:
// re-keyed by sender and time, sharded by sender.
func ChatProjectionYAML(db string) string {
	return fmt.Sprintf(`  messages_by_sender:
    from: %[1]s.messages
    sink: reads
    key: [sender_id, created_at, id]
    shard_by: sender_id
    columns: {sender_id: sender_id, created_at: created_at, id: id, body: body}
`, db)
}
