// Package e2e holds readside's end-to-end tests. They run against the real
// servers the testbed package starts (MariaDB with ROW binlog, Apache Kafka
// in KRaft mode) when E2E=1 is set — `make e2e` and `make test` set it — and
// skip with a message otherwise.
package e2e
