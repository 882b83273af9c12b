-- Run once by the mysql:8.4 image on an empty data directory
-- (/docker-entrypoint-initdb.d). It creates the sample source schema that
-- deploy/readside.yaml captures, the database for the read tables, and
-- readside's two users. The passwords match deploy/compose.yaml; change both
-- together (and never use these outside a laptop).

CREATE DATABASE shop;
CREATE DATABASE chat;
-- Read tables live in their own database; readside creates them
-- (readside plan shows the DDL). Not "reads": READS is a reserved word in
-- MySQL and MariaDB.
CREATE DATABASE read_models;
-- readside's snapshot watermark and request tables (source.snapshot.signal_db).
CREATE DATABASE readside;

CREATE TABLE shop.customers (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  name VARCHAR(100) NOT NULL,
  tier VARCHAR(20) NOT NULL DEFAULT 'basic',
  email VARCHAR(190) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE shop.orders (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  customer_id BIGINT UNSIGNED NOT NULL,
  status VARCHAR(20) NOT NULL,
  total_cents BIGINT NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY (customer_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE chat.messages (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY,
  conversation_id BIGINT UNSIGNED NOT NULL,
  sender_id BIGINT UNSIGNED NOT NULL,
  body TEXT NOT NULL,
  created_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
  KEY (sender_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The tailer connects as a replica (docs/operations.md, Grants).
CREATE USER 'repl'@'%' IDENTIFIED BY 'repl-password';
GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO 'repl'@'%';
GRANT CREATE, CREATE TEMPORARY TABLES, INSERT, UPDATE, DELETE ON readside.* TO 'repl'@'%';

-- The projectors write the read tables and their bookkeeping tables
-- (_readside_offsets, ...) in the sink database, and create them on start.
-- ALTER and DROP are for replay --rebuild (shadow table, RENAME TABLE, --drop-old).
CREATE USER 'projector'@'%' IDENTIFIED BY 'projector-password';
GRANT SELECT, INSERT, UPDATE, DELETE, CREATE, ALTER, DROP, INDEX ON read_models.* TO 'projector'@'%';

-- A few rows so the read tables are not empty after the initial snapshot.
INSERT INTO shop.customers (name, tier, email) VALUES
  ('Ada', 'gold', 'ada@example.com'),
  ('Grace', 'basic', 'grace@example.com');
INSERT INTO shop.orders (customer_id, status, total_cents) VALUES
  (1, 'paid', 1250), (1, 'shipped', 990), (2, 'paid', 4200);
INSERT INTO chat.messages (conversation_id, sender_id, body) VALUES
  (1, 1, 'hello'), (1, 2, 'hi Ada');
