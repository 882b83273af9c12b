package testbed_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/readside/readside/e2e/testbed"
)

// The Avro value schema of a table as debezium-avro registers it, and its
// two kinds of change: a column added as nullable with a default (readers
// of the new schema still read the old data: BACKWARD compatible) and a
// column added NOT NULL without a default (they cannot: a real registry
// refuses it under BACKWARD; the in-memory one only through Refuse).
const (
	registryV1 = `{"type":"record","name":"Value","namespace":"rs.inventory.customers","fields":[` +
		`{"name":"id","type":"int"},{"name":"email","type":"string"}]}`
	registryCompatible = `{"type":"record","name":"Value","namespace":"rs.inventory.customers","fields":[` +
		`{"name":"id","type":"int"},{"name":"email","type":"string"},{"name":"tier","type":["null","int"],"default":null}]}`
	registryIncompatible = `{"type":"record","name":"Value","namespace":"rs.inventory.customers","fields":[` +
		`{"name":"id","type":"int"},{"name":"email","type":"string"},{"name":"tier","type":"int"}]}`
)

// TestRegistry drives the test bed's registry with franz-go's sr client the
// way a debezium-avro writer does: register a value schema under its
// topic's subject, read it back by id, register it again (a restart: same
// id, no new version), see a change become version 2 under a new id, and
// see Refuse answer a registration as Confluent refuses an incompatible
// change (409, error_code 409), naming the verdict, with no version made,
// and FailLookups answer lookups by id as an unavailable registry (503).
func TestRegistry(t *testing.T) {
	ctx := t.Context()
	reg, err := testbed.StartRegistry(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := reg.Close(); err != nil {
			t.Error(err)
		}
	})
	cl, err := sr.NewClient(sr.URLs(reg.URL()))
	if err != nil {
		t.Fatal(err)
	}
	const subject = "rs.inventory.customers-value"
	id1, err := cl.RegisterSchema(ctx, subject, sr.Schema{Schema: registryV1, Type: sr.TypeAvro}, -1, -1)
	if err != nil {
		t.Fatalf("registering the first schema: %v", err)
	}
	byID, err := cl.SchemaByID(ctx, id1)
	if err != nil {
		t.Fatalf("schema by id %d: %v", id1, err)
	}
	if byID.Type != sr.TypeAvro || !sameJSON(t, byID.Schema, registryV1) {
		t.Fatalf("schema by id %d = %s %s, want the Avro schema registered", id1, byID.Type, byID.Schema)
	}
	if again, err := cl.RegisterSchema(ctx, subject, sr.Schema{Schema: registryV1}, -1, -1); err != nil || again != id1 {
		t.Fatalf("registering the same schema again = id %d, %v; want id %d (a restarted writer re-registers)", again, err, id1)
	}

	const verdict = "Schema being registered is incompatible with an earlier schema for subject \"" + subject + "\""
	reg.Refuse(subject, verdict)
	_, err = cl.RegisterSchema(ctx, subject, sr.Schema{Schema: registryIncompatible}, -1, -1)
	var refusal *sr.ResponseError
	if !errors.As(err, &refusal) || refusal.StatusCode != http.StatusConflict ||
		refusal.SchemaError() != sr.ErrIncompatibleSchema || refusal.Message != verdict {
		t.Fatalf("registering under a refused subject = %v; want Confluent's 409 INCOMPATIBLE_SCHEMA with the verdict %q", err, verdict)
	}
	if other, err := cl.RegisterSchema(ctx, "rs.inventory.orders-value", sr.Schema{Schema: registryV1}, -1, -1); err != nil || other != id1 {
		t.Fatalf("registering under another subject = id %d, %v; want id %d: a refusal is per subject", other, err, id1)
	}
	reg.Refuse(subject, "")

	id2, err := cl.RegisterSchema(ctx, subject, sr.Schema{Schema: registryCompatible}, -1, -1)
	if err != nil {
		t.Fatalf("registering a compatible change: %v", err)
	}
	latest, err := cl.SchemaByVersion(ctx, subject, -1)
	if err != nil {
		t.Fatalf("latest version of %s: %v", subject, err)
	}
	if latest.Version != 2 || latest.ID != id2 || id2 == id1 || !sameJSON(t, latest.Schema.Schema, registryCompatible) {
		t.Fatalf("latest of %s = version %d id %d (first id %d, compatible id %d); want version 2 with the compatible schema under a new id",
			subject, latest.Version, latest.ID, id1, id2)
	}
	if versions, err := cl.SubjectVersions(ctx, subject); err != nil || !slices.Equal(versions, []int{1, 2}) {
		t.Fatalf("versions of %s = %v, %v; want [1 2]: the refused registration made none", subject, versions, err)
	}

	reg.FailLookups(true)
	var down *sr.ResponseError
	if _, err := cl.SchemaByID(ctx, id1); !errors.As(err, &down) || down.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a lookup by id while lookups fail = %v; want HTTP 503, a registry that does not answer", err)
	}
	if again, err := cl.RegisterSchema(ctx, subject, sr.Schema{Schema: registryCompatible}, -1, -1); err != nil || again != id2 {
		t.Fatalf("registering while lookups fail = id %d, %v; want id %d: only consumers' lookups fail", again, err, id2)
	}
	reg.FailLookups(false)
	if _, err := cl.SchemaByID(ctx, id1); err != nil {
		t.Fatalf("a lookup by id once lookups answer again: %v", err)
	}
}

// sameJSON compares two JSON texts as values: a registry may store a
// schema with other spacing or key order.
func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal([]byte(a), &va); err != nil {
		t.Fatalf("schema text %q: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &vb); err != nil {
		t.Fatalf("schema text %q: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}
