package testbed

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hamba/avro/v2"
)

// AvroAsJSON decodes an Avro binary body (the Confluent frame removed)
// with its writer's schema by an Avro library, independent of readside's
// encoder, into the JSON converter's form of the same Connect value,
// decoded with UseNumber: bytes as base64, a float as its shortest float32
// text, a union branch as its value. Avro's logical types are read as
// their underlying types, which is the JSON converter's form (a decimal's
// unscaled bytes, days, milliseconds).
func AvroAsJSON(schema string, body []byte) (any, error) {
	plain, err := plainSchema(schema)
	if err != nil {
		return nil, err
	}
	s, err := avro.ParseWithCache(plain, "", &avro.SchemaCache{})
	if err != nil {
		return nil, fmt.Errorf("parsing the schema: %w", err)
	}
	var got any
	if err := avro.Unmarshal(s, body, &got); err != nil {
		return nil, fmt.Errorf("decoding: %w", err)
	}
	b, err := json.Marshal(jsonForm(got))
	if err != nil {
		return nil, err
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out any
	return out, d.Decode(&out)
}

// plainSchema drops every logicalType from an Avro schema.
func plainSchema(schema string) (string, error) {
	var v any
	if err := json.Unmarshal([]byte(schema), &v); err != nil {
		return "", err
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			delete(x, "logicalType")
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	b, err := json.Marshal(v)
	return string(b), err
}

// jsonForm turns a generic Avro value into the JSON converter's form. The
// library gives a union's record branch as {"full.name": value} and its
// array branch as {"array": [...]}; a field name never holds a dot, and no
// column of readside's is an array, so such maps are unwrapped.
func jsonForm(v any) any {
	switch x := v.(type) {
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case float32:
		return json.Number(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonForm(e)
		}
		return out
	case map[string]any:
		if len(x) == 1 {
			for k, e := range x {
				if _, isRecord := e.(map[string]any); isRecord && strings.Contains(k, ".") {
					return jsonForm(e)
				}
				if _, isArray := e.([]any); isArray && k == "array" {
					return jsonForm(e)
				}
			}
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = jsonForm(e)
		}
		return out
	}
	return v
}
