package config

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/knadh/koanf/parsers/yaml"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/rawbytes"
	"github.com/knadh/koanf/v2"
)

// EnvPrefix starts every environment override. Nesting uses a double
// underscore: READSIDE_SOURCE__SERVER_ID=7 sets source.server_id.
const EnvPrefix = "READSIDE_"

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Load reads the YAML file at path (empty: no file), expands ${VAR}
// references from environ, applies READSIDE_* overrides from environ on top
// of Default(), reads *_file secrets, and validates. Unknown keys are
// errors. Every problem found is returned, joined.
func Load(path string, environ []string) (Config, error) {
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	k := koanf.New(".")
	if path != "" {
		raw, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("reading config: %w", err)
		}
		var missing []string
		expanded := varRef.ReplaceAllStringFunc(string(raw), func(ref string) string {
			name := varRef.FindStringSubmatch(ref)[1]
			v, ok := env[name]
			if !ok {
				missing = append(missing, name)
			}
			return v
		})
		if len(missing) > 0 {
			return Config{}, fmt.Errorf("config %s refers to unset environment variables %s: set them or remove the ${...} references", path, strings.Join(missing, ", "))
		}
		if err := k.Load(rawbytes.Provider([]byte(expanded)), yaml.Parser()); err != nil {
			return Config{}, fmt.Errorf("parsing config %s: %w", path, err)
		}
	}
	overrides := map[string]any{}
	fromEnv := map[string]string{} // key → the variable that set it
	for name, v := range env {
		if !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		key := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(name, EnvPrefix), "__", "."))
		fromEnv[key] = name
		if strings.Contains(v, ",") && listKeys[key] {
			overrides[key] = strings.Split(v, ",")
		} else {
			overrides[key] = v
		}
	}
	if err := k.Load(confmap.Provider(overrides, "."), nil); err != nil {
		return Config{}, fmt.Errorf("applying %s* environment overrides: %w", EnvPrefix, err)
	}

	cfg, err := decode(k)
	// A bad mode value leaves its field at the default and the rest
	// decoded, and an unknown key is left out, so they are reported
	// together with every other problem. The decoder leaves out a map
	// entry holding either whole: decoded again without the offending
	// keys, the entry is there (a bad value at its default), and a
	// projection naming that sink is not told it does not exist.
	modeErrs, offending, other := modeErrors(err, fromEnv)
	if other {
		return Config{}, fmt.Errorf("config: %w (see docs/config.md for every key)", err)
	}
	if len(offending) > 0 {
		for _, key := range offending {
			k.Delete(key)
		}
		if again, err := decode(k); err == nil {
			cfg = again
		}
	}
	if err := cfg.readSecretFiles(); err != nil {
		return Config{}, errors.Join(modeErrs, err)
	}
	if err := errors.Join(modeErrs, cfg.Validate()); err != nil {
		return Config{}, &Invalid{Config: cfg, Err: err}
	}
	return cfg, nil
}

// Invalid is Load's error for a config that parses but does not decode
// whole or does not validate. Config is what was decoded (a bad mode
// value at its default; a map entry with an unknown key or a value of
// another shape left out), for `readside check` and `plan` to go on
// listing the projections' problems; nothing may run with it.
type Invalid struct {
	Config Config
	Err    error // every problem, joined
}

func (e *Invalid) Error() string { return e.Err.Error() }

func (e *Invalid) Unwrap() error { return e.Err }

// modeErrors picks the decoder's errors about mode values (choiceError)
// and unknown keys out of err and names each by its key as Validate does
// ("projections.orders.on_error"), joined; other reports any error that
// is neither.
//
// A key an environment override set says so: the file does not hold it.
func modeErrors(err error, fromEnv map[string]string) (modes error, offending []string, other bool) {
	var found []error
	setBy := func(keys ...string) string {
		var names []string
		for _, k := range keys {
			if name, ok := fromEnv[k]; ok {
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return ""
		}
		return " (set by the environment: " + strings.Join(names, ", ") + ")"
	}
	var walk func(error)
	walk = func(e error) {
		var ce *choiceError
		switch x := e.(type) {
		case *mapstructure.DecodeError:
			key := mapKey.ReplaceAllString(x.Name(), ".$1")
			switch keys, unknown := strings.CutPrefix(x.Unwrap().Error(), "has invalid keys: "); {
			case errors.As(x.Unwrap(), &ce):
				found = append(found, fmt.Errorf("%s %w%s", key, ce, setBy(key)))
				offending = append(offending, key)
			case unknown:
				if key == "config.Config" { // the decoder's name of the top level
					key = ""
				}
				var full []string
				for _, u := range strings.Split(keys, ", ") {
					full = append(full, strings.TrimPrefix(key+"."+u, "."))
				}
				found = append(found, fmt.Errorf("%s has unknown keys: %s: correct or remove them (docs/config.md lists every key)%s", cmp.Or(key, "the config"), keys, setBy(full...)))
				offending = append(offending, full...)
			default:
				// A value of another shape or type: the decoder went on
				// with the rest, and leaves this one at its default.
				found = append(found, fmt.Errorf("%s: %w: give it the form docs/config.md shows%s", cmp.Or(key, "the config"), x.Unwrap(), setBy(key)))
				if key != "" {
					offending = append(offending, key)
				}
			}
		case interface{ Unwrap() []error }:
			for _, c := range x.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			walk(x.Unwrap())
		default:
			other = e != nil || other
		}
	}
	walk(err)
	return errors.Join(found...), offending, other
}

// decode is the config k holds, on top of Default().
func decode(k *koanf.Koanf) (Config, error) {
	cfg := Default()
	err := k.UnmarshalWithConf("", &cfg, koanf.UnmarshalConf{
		Tag: "koanf",
		DecoderConfig: &mapstructure.DecoderConfig{
			Result:           &cfg,
			TagName:          "koanf",
			ErrorUnused:      true,
			WeaklyTypedInput: true,
			DecodeHook: mapstructure.ComposeDecodeHookFunc(
				bareDurationHook,
				mapstructure.StringToTimeDurationHookFunc(),
				mapstructure.StringToSliceHookFunc(","),
				mapstructure.TextUnmarshallerHookFunc(),
				tableKeysHook,
				debeziumHook,
			),
		},
	})
	return cfg, err
}

// bareDurationHook refuses a number without a unit where a duration goes:
// YAML hands `heartbeat_period: 5` over as the integer 5, which the
// decoder would take as 5 nanoseconds (a tailer whose reads all time out,
// a drain that ends at once). 0 is 0 in any unit.
func bareDurationHook(from, to reflect.Type, data any) (any, error) {
	if to != reflect.TypeOf(time.Duration(0)) {
		return data, nil
	}
	switch from.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		if v := reflect.ValueOf(data); !v.IsZero() {
			return nil, fmt.Errorf("%v has no unit, so it would be %v nanoseconds: write the duration with its unit, e.g. \"%vs\" or \"%vms\"", data, data, data, data)
		}
	}
	return data, nil
}

// mapKey is how the decoder names a map entry in a key path
// ("projections[orders]").
var mapKey = regexp.MustCompile(`\[([^\]]*)\]`)

// listKeys are the keys an environment override may set to a
// comma-separated list.
var listKeys = map[string]bool{"source.tables": true, "kafka.brokers": true, "source.exclude_columns": true}

func (c *Config) readSecretFiles() error {
	var errs []error
	read := func(key string, file string, into *Secret) {
		if file == "" {
			return
		}
		if *into != "" {
			errs = append(errs, fmt.Errorf("%s and %s_file are both set: keep one", key, key))
			return
		}
		st, err := os.Stat(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s_file: %w", key, err))
			return
		}
		if st.Mode().Perm()&0o004 != 0 {
			errs = append(errs, fmt.Errorf("%s_file %s is world-readable: chmod o-r %s", key, file, file))
			return
		}
		b, err := os.ReadFile(file)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s_file: %w", key, err))
			return
		}
		*into = Secret(strings.TrimSpace(string(b)))
	}
	read("source.dsn", c.Source.DSNFile, &c.Source.DSN)
	for name, s := range c.Sinks {
		read("sinks."+name+".dsn", s.DSNFile, &s.DSN)
		for i := range s.Shards {
			read(fmt.Sprintf("sinks.%s.shards[%d].dsn", name, i), s.Shards[i].DSNFile, &s.Shards[i].DSN)
		}
		c.Sinks[name] = s
	}
	return errors.Join(errs...)
}
