package main

// The set-up every verb shares: its flag set with -c/--config, parsing,
// loading the config, the signal context, the logger and the embedded
// broker fallback. A verb keeps only its own flags, checks and work.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/readside/readside/config"
	"github.com/readside/readside/internal/librarylog"
	"github.com/readside/readside/internal/logkeys"
	"github.com/readside/readside/internal/progress"
	"github.com/readside/readside/projections"
)

// commonFlags are the flags every verb takes.
type commonFlags struct {
	configPath string
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.configPath, "c", "readside.yaml", "read the config from `FILE`")
	fs.StringVar(&c.configPath, "config", "readside.yaml", "read the config from `FILE`")
}

// command is one verb's invocation: its flags (the common ones
// registered), where it prints, and the prefix of its messages.
type command struct {
	fs             *flag.FlagSet
	common         commonFlags
	stdout, stderr io.Writer
	prefix         string // "readside <verb>"
	// jsonLog, once the config says log.format: json, is where the verb's
	// failure goes, as a JSON line like the rest of its stderr (nil:
	// plain text).
	jsonLog *slog.Logger
}

// logsFailures makes the verb's failures lines of log when the config
// logs JSON.
func (c *command) logsFailures(cfg config.Log, log *slog.Logger) {
	if cfg.Format == config.LogJSON {
		c.jsonLog = log
	}
}

// newCommand starts the verb's set-up: a flag set with -c/--config, to
// which the verb adds its own flags before parse.
func newCommand(verb string, stdout, stderr io.Writer) *command {
	c := &command{fs: newFlagSet(verb), stdout: stdout, stderr: stderr, prefix: "readside " + verb}
	c.common.register(c.fs)
	return c
}

// parse parses args (parseFlags): done is true when the verb must return
// code at once.
func (c *command) parse(args []string) (code int, done bool) {
	return parseFlags(c.fs, args, c.stdout, c.stderr)
}

// failf prints "readside <verb>: " and the message on stderr and returns
// code.
func (c *command) failf(code int, format string, a ...any) int {
	if c.jsonLog != nil {
		c.jsonLog.Error(c.prefix+": "+fmt.Sprintf(format, a...), "exit_code", code)
		return code
	}
	fmt.Fprintf(c.stderr, c.prefix+": "+format+"\n", a...)
	return code
}

// failLines is failf for an error of several lines (errors.Join's): it
// starts on the line after "readside <verb>:".
func (c *command) failLines(code int, err error) int {
	if c.jsonLog != nil {
		c.jsonLog.Error(c.prefix+": "+err.Error(), "exit_code", code)
		return code
	}
	fmt.Fprintf(c.stderr, "%s:\n%v\n", c.prefix, err)
	return code
}

// load loads the config -c names, with the environment's overrides.
func (c *command) load() (config.Config, error) {
	return config.Load(c.common.configPath, os.Environ())
}

// loadOrFail loads the config; when it does not load, it says why and
// returns ok false with the usage exit code.
func (c *command) loadOrFail() (cfg config.Config, code int, ok bool) {
	cfg, err := c.load()
	if err != nil {
		// A config that parsed but does not validate still says how to
		// log.
		var invalid *config.Invalid
		if errors.As(err, &invalid) {
			c.logsFailures(invalid.Config.Log, newLogger(invalid.Config.Log, c.stderr))
		}
		return cfg, c.failf(exitUsage, "%v", err), false
	}
	return cfg, exitOK, true
}

// signalContext is cancelled by SIGINT or SIGTERM: the verb stops its
// work and returns.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// env is what a verb that works as a client of a running pipeline
// starts with.
type env struct {
	// cfg is the config loaded, its Kafka.Brokers those a client dials
	// (the embedded broker's address when the config names none).
	cfg  config.Config
	log  *slog.Logger
	ctx  context.Context // cancelled by SIGINT or SIGTERM
	stop context.CancelFunc
	// stderr is where the verb's log and progress go.
	stderr io.Writer
}

// client loads the config and sets up the logger and the signal context
// (stop releases it). nil: the config did not load, said on stderr, and
// the verb returns code.
func (c *command) client() (*env, int) {
	cfg, code, ok := c.loadOrFail()
	if !ok {
		return nil, code
	}
	cfg.Kafka.Brokers = cfg.Kafka.ClientBrokers()
	e := &env{cfg: cfg, log: newLogger(cfg.Log, c.stderr), stderr: c.stderr}
	c.logsFailures(cfg.Log, e.log)
	librarylog.RouteMySQLDriver(e.log)
	e.ctx, e.stop = signalContext()
	return e, exitOK
}

// setup parses args, then, when check (nil: none) finds nothing wrong
// with the flags' combination, sets up the client (client). check reads
// the parsed flags: a method value of a pointer receiver, or a closure. nil: the verb
// returns code at once (after --help, a bad invocation, a config that
// does not load).
func (c *command) setup(args []string, check func() string) (*env, int) {
	if code, done := c.parse(args); done {
		return nil, code
	}
	if check != nil {
		if problem := check(); problem != "" {
			return nil, c.failf(exitUsage, "%s", problem)
		}
	}
	return c.client()
}

// newLogger is the process's logger as cfg sets it; its level is
// logLevel, which SIGHUP changes (reload.go).
func newLogger(cfg config.Log, w io.Writer) *slog.Logger {
	logLevel.Set(cfg.Level.Slog())
	opts := &slog.HandlerOptions{Level: logLevel}
	// logkeys: one value per key on every line, and JSON that encodes,
	// whatever the libraries handed this logger (go-mysql, franz-go) log.
	if cfg.Format == config.LogJSON {
		return slog.New(logkeys.New(slog.NewJSONHandler(w, opts), true))
	}
	return slog.New(logkeys.New(slog.NewTextHandler(w, opts), false))
}

// projection is the compiled projection --projection names, or nil and
// the exit code after saying why not (the declarations' problems, or the
// names declared).
func (c *command) projection(cfg config.Config, name string) (*projections.Projection, int) {
	ps, err := projections.Compile(cfg)
	if err != nil {
		return nil, c.failLines(exitUsage, err)
	}
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
		if p.Name == name {
			return p, exitOK
		}
	}
	return nil, c.failf(exitUsage, "--projection %q is not declared; declared: %s", name, strings.Join(names, ", "))
}

// progressLine is a long command's progress line on stderr; under
// log.format json its lines are JSON ones through log (progress.Line).
func progressLine(stderr io.Writer, every time.Duration, cfg config.Log, log *slog.Logger) progress.Line {
	l := progress.Line{Out: stderr, Every: every, TTY: isTerminal(stderr)}
	if cfg.Format == config.LogJSON {
		l.JSON = log
	}
	return l
}
