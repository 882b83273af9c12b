package logkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// CheckJSON says what is wrong with one line of the JSON log, nil when
// nothing: it must be one JSON object, with each key once in every object
// (encoding/json keeps the last of a repeated key silently, so the line is
// walked token by token), time, level and msg present, and no value the
// JSON handler failed to encode ("!ERROR:").
func CheckJSON(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("not a JSON object: starts with %v", tok)
	}
	top, err := object(dec, "")
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("more than one JSON value on the line")
	}
	var problems []error
	for _, k := range []string{"time", "level", "msg"} {
		if !top[k] {
			problems = append(problems, fmt.Errorf("no %q key", k))
		}
	}
	if bytes.Contains(line, []byte("!ERROR:")) {
		problems = append(problems, errors.New("a value failed to encode (!ERROR:)"))
	}
	return errors.Join(problems...)
}

// object reads the members of an object whose '{' was read, through its
// '}', and returns its keys; path names it in errors.
func object(dec *json.Decoder, path string) (map[string]bool, error) {
	keys := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		k := tok.(string) // object keys are strings, or Token failed
		if keys[k] {
			return nil, fmt.Errorf("key %q repeated", strings.TrimPrefix(path+"."+k, "."))
		}
		keys[k] = true
		if err := value(dec, path+"."+k); err != nil {
			return nil, err
		}
	}
	_, err := dec.Token() // '}'
	return keys, err
}

func value(dec *json.Decoder, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		_, err = object(dec, path)
		return err
	case json.Delim('['):
		for dec.More() {
			if err := value(dec, path); err != nil {
				return err
			}
		}
		_, err = dec.Token() // ']'
		return err
	}
	return nil
}
