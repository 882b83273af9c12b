package testbed_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/sr"

	"github.com/readside/readside/e2e/testbed"
)

// The Avro value schema of a table as debezium-avro registers it, and its
// two kinds of change: a column added as nullable with a default (readers
// of the new schema still read the old data: BACKWARD compatible) and a
// column added NOT NULL without a default (they cannot: refused under
// BACKWARD).
const (
	registryV1 = `{"type":"record","name":"Value","namespace":"rs.inventory.customers","fields":[` +
		`{"name":"id","type":"int"},{"name":"email","type":"string"}]}`
	registryCompatible = `{"type":"record","name":"Value","namespace":"rs.inventory.customers","fields":[` +
		`{"name":"id","type":"int"},{"name":"email","type":"string"},{"name":"tier","type":["null","int"],"default":null}]}`
	registryIncompatible = `{"type":"record","name":"Value","namespace":"rs.inventory.customers","fields":[` +
		`{"name":"id","type":"int"},{"name":"email","type":"string"},{"name":"tier","type":"int"}]}`
)

// TestRegistry starts the test bed's Apicurio Registry (building it first
// when the cache lacks it) and drives its Confluent-compatible API with
// franz-go's sr client the way a debezium-avro writer does: register a
// value schema under its topic's subject, read it back by id, register it
// again (a restart: same id, no new version), under another subject (same
// content, same id), then under BACKWARD compatibility see an incompatible
// change judged and refused with Confluent's 409 and a compatible one
// become version 2, and FailLookups answer lookups by id as an unavailable
// registry (503) while registrations go through.
func TestRegistry(t *testing.T) {
	if !testbed.Enabled() {
		t.Skip("e2e: starts Apicurio Registry (a JVM); run `make e2e` (or set E2E=1)")
	}
	if testbed.BrokerKind() == "kfake" {
		t.Skip("e2e on kfake: the fast loop runs the in-memory registry, not Apicurio; run on the real broker (E2E=1)")
	}
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
	t.Logf("%s answered at %s %s after exec", reg.Version(), reg.URL(), reg.Startup().Round(time.Millisecond))

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
	if other, err := cl.RegisterSchema(ctx, "rs.inventory.orders-value", sr.Schema{Schema: registryV1}, -1, -1); err != nil || other != id1 {
		t.Fatalf("registering the same schema under another subject = id %d, %v; want id %d (ids name content)", other, err, id1)
	}

	set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatBackward}, subject)
	if set[0].Err != nil {
		t.Fatalf("setting BACKWARD on %s: %v", subject, set[0].Err)
	}
	if got := cl.Compatibility(ctx, subject); got[0].Err != nil || got[0].Level != sr.CompatBackward {
		t.Fatalf("compatibility of %s = %s, %v; want BACKWARD", subject, got[0].Level, got[0].Err)
	}

	_, err = cl.RegisterSchema(ctx, subject, sr.Schema{Schema: registryIncompatible}, -1, -1)
	var refusal *sr.ResponseError
	if !errors.As(err, &refusal) || refusal.StatusCode != http.StatusConflict {
		t.Fatalf("registering an incompatible change = %v; want the registry's 409 refusal", err)
	}
	t.Logf("the registry's refusal: HTTP %d, error_code %d, message %q", refusal.StatusCode, refusal.ErrorCode, refusal.Message)
	if check, err := cl.CheckCompatibility(ctx, subject, -1, sr.Schema{Schema: registryIncompatible}); err != nil || check.Is {
		t.Fatalf("compatibility check of the incompatible change = %+v, %v; want not compatible", check, err)
	}

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
		t.Fatalf("versions of %s = %v, %v; want [1 2]: the refused change made none", subject, versions, err)
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
