package main

// Help and flag parsing shared by every verb: `readside <verb> --help`
// prints the verb's one-line description, its flags (a flag registered
// under a short and a long name, like -c and --config, is one line) and an
// example, and exits 0; a bad flag or a stray argument names itself and
// exits 2. The Go flag package's own usage output lists aliases twice and
// has no description, so it is never shown.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// helpWidth is the column the help text wraps at.
const helpWidth = 100

// newFlagSet returns the flag set of a verb; parseFlags parses it.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// parseFlags reports errors itself, with the verb's name and the way
	// to its help.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs. done is true when the verb must return
// code at once: after --help (help on stdout, exit 0) or a bad invocation
// (the cause on stderr, exit 2).
func parseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, done bool) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		writeVerbHelp(stdout, fs)
		return exitOK, true
	case err != nil:
		fmt.Fprintf(stderr, "readside %s: %v\nrun 'readside %s --help' for its flags\n", fs.Name(), err, fs.Name())
		return exitUsage, true
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "readside %s: unexpected argument %q: this command takes only flags\nrun 'readside %s --help' for its flags\n", fs.Name(), fs.Arg(0), fs.Name())
		return exitUsage, true
	}
	return exitOK, false
}

// writeUsage lists the verbs with what each does.
func writeUsage(w io.Writer) {
	fmt.Fprintln(w, "readside keeps read models of a MySQL or MariaDB database up to date: it tails the binlog into")
	fmt.Fprintln(w, "Kafka, and projections upsert the changes into read tables in MySQL.")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "usage: readside <command> [-c readside.yaml] [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, v := range verbs() {
		fmt.Fprintf(w, "  %-9s %s\n", v.name, v.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Every command but version reads its config from -c, --config FILE (default readside.yaml);")
	fmt.Fprintln(w, "READSIDE_* environment variables override its keys (docs/config.md).")
	fmt.Fprintln(w, "Run 'readside <command> --help' for a command's flags and an example.")
}

// writeVerbHelp prints the help of the verb fs belongs to.
func writeVerbHelp(w io.Writer, fs *flag.FlagSet) {
	var v verb
	for _, c := range verbs() {
		if c.name == fs.Name() {
			v = c
		}
	}
	fmt.Fprintf(w, "readside %s: %s\n\n", v.name, v.summary)
	fmt.Fprintf(w, "usage: readside %s", v.name)
	if v.synopsis != "" {
		fmt.Fprintf(w, " %s", v.synopsis)
	}
	fmt.Fprintln(w)
	if lines := flagLines(fs); len(lines) > 0 {
		fmt.Fprintln(w, "\nflags:")
		for _, l := range lines {
			fmt.Fprint(w, l)
		}
	}
	fmt.Fprintln(w, "\nexample:")
	for _, e := range v.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
}

// flagLines renders fs's flags, one entry per distinct flag: names that
// share a value (aliases) are listed together, short one first.
func flagLines(fs *flag.FlagSet) []string {
	type entry struct {
		names []string
		f     *flag.Flag
	}
	var entries []*entry
	byValue := map[flag.Value]*entry{}
	fs.VisitAll(func(f *flag.Flag) {
		if e, ok := byValue[f.Value]; ok {
			e.names = append(e.names, f.Name)
			return
		}
		e := &entry{names: []string{f.Name}, f: f}
		byValue[f.Value] = e
		entries = append(entries, e)
	})
	specs := make([]string, len(entries))
	width := 0
	for i, e := range entries {
		sort.Slice(e.names, func(a, b int) bool { return len(e.names[a]) < len(e.names[b]) })
		var names []string
		for _, n := range e.names {
			if len(n) == 1 {
				names = append(names, "-"+n)
			} else {
				names = append(names, "--"+n)
			}
		}
		spec := strings.Join(names, ", ")
		if len(e.names[0]) > 1 {
			spec = "    " + spec // long-only flags line up with the long names of aliased ones
		}
		arg, _ := flag.UnquoteUsage(e.f)
		if arg != "" {
			spec += " " + arg
		}
		specs[i] = spec
		width = max(width, len(spec))
	}
	width = min(width, 30)
	out := make([]string, len(entries))
	for i, e := range entries {
		_, usage := flag.UnquoteUsage(e.f)
		if d := e.f.DefValue; d != "" && d != "false" && d != "0" && d != "0s" {
			usage += fmt.Sprintf(" (default %s)", d)
		}
		spec := "  " + specs[i]
		indent := strings.Repeat(" ", 2+width+2)
		var b strings.Builder
		if len(specs[i]) > width {
			b.WriteString(spec + "\n" + indent)
		} else {
			b.WriteString(spec + strings.Repeat(" ", width-len(specs[i])+2))
		}
		b.WriteString(wrap(usage, helpWidth-len(indent), "\n"+indent))
		b.WriteString("\n")
		out[i] = b.String()
	}
	return out
}

// wrap breaks text at spaces so no line is longer than width (a longer
// word stays whole), joining the lines with sep.
func wrap(text string, width int, sep string) string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) > width:
			lines = append(lines, line)
			line = word
		default:
			line += " " + word
		}
	}
	return strings.Join(append(lines, line), sep)
}
