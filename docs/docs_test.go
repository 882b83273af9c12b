// Package docs holds no code: its tests keep the documentation true to the
// tree. docs/ARCHITECTURE.md is the map a newcomer reads first, so every
// file and test it names must exist, and no markdown link or quoted section
// reference anywhere may point at a heading that moved away.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// root is the repository root, one level up from this package.
const root = ".."

// TestArchitectureNamesExist: every backticked path and TestName in the
// map exists. A bare file name (`stream.go`) in a package-map row is looked
// up in that row's packages; a path with a slash is looked up from the root.
// Backticked words that are not paths (config keys, verbs, /endpoints) are
// left alone.
func TestArchitectureNamesExist(t *testing.T) {
	report(t, namesExist(t, "docs/ARCHITECTURE.md", testNames(t), true))
}

// TestDesignNamesExist: the design arguments name the tests that fail
// without their invariant; those tests and every path with a slash exist.
// A bare file name there is read in the package the prose is about, so it
// is not checked.
func TestDesignNamesExist(t *testing.T) {
	tests := testNames(t)
	var problems []error
	for _, f := range files(t, ".md") {
		if strings.HasPrefix(f, "docs/design/") {
			problems = append(problems, namesExist(t, f, tests, false)...)
		}
	}
	report(t, problems)
}

// namesExist checks the backticked tests and paths of one markdown file;
// bare file names are checked only when bare is set.
func namesExist(t *testing.T, doc string, tests map[string]bool, bare bool) []error {
	var problems []error
	for n, line := range strings.Split(read(t, doc), "\n") {
		dirs := rowDirs(line)
		for _, m := range backticked.FindAllStringSubmatch(line, -1) {
			tok := m[1]
			switch {
			case testName.MatchString(tok):
				if !tests[tok] {
					problems = append(problems, fmt.Errorf("%s:%d: test %s is named but no func %s exists in any _test.go; fix the name or the text", doc, n+1, tok, tok))
				}
			case isPath(tok) && (bare || strings.Contains(tok, "/") && inTree(tok)):
				if !pathExists(tok, dirs) {
					problems = append(problems, fmt.Errorf("%s:%d: %s does not exist (looked in %v and the root); fix the path or the text", doc, n+1, tok, dirs))
				}
			}
		}
	}
	return problems
}

// TestMarkdownLinksResolve: every relative markdown link in the tree's
// markdown files names a file that exists and, with #anchor, a heading of
// that file under GitHub's anchor rules.
func TestMarkdownLinksResolve(t *testing.T) {
	var problems []error
	for _, md := range files(t, ".md") {
		text := read(t, md)
		for _, m := range mdLink.FindAllStringSubmatch(stripCode(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := md
			if file != "" {
				dest = filepath.ToSlash(filepath.Join(filepath.Dir(md), file))
			}
			if _, err := os.Stat(filepath.Join(root, dest)); err != nil {
				problems = append(problems, fmt.Errorf("%s: link %q: %s does not exist", md, target, dest))
				continue
			}
			if anchor == "" || !strings.HasSuffix(dest, ".md") {
				continue
			}
			if !anchors(t, dest)[anchor] {
				problems = append(problems, fmt.Errorf("%s: link %q: %s has no heading with anchor #%s", md, target, dest, anchor))
			}
		}
	}
	report(t, problems)
}

// TestQuotedSectionsExist: a reference in prose or a code comment of the
// form docs/<file>.md, "<Section>" names a heading of docs/x.md that starts with
// the quoted text (a comment may quote a heading's first words).
func TestQuotedSectionsExist(t *testing.T) {
	var problems []error
	for _, f := range append(files(t, ".md"), files(t, ".go")...) {
		text := commentJoin.ReplaceAllString(read(t, f), " ")
		for _, m := range quotedRef.FindAllStringSubmatch(text, -1) {
			doc, section := m[1], strings.Join(strings.Fields(m[2]), " ")
			if _, err := os.Stat(filepath.Join(root, doc)); err != nil {
				problems = append(problems, fmt.Errorf("%s: reference to %s %q: the file does not exist", f, doc, section))
				continue
			}
			if !hasHeadingPrefix(t, doc, section) {
				problems = append(problems, fmt.Errorf("%s: reference to %s %q: no heading there starts so; point it at the file that holds the section", f, doc, section))
			}
		}
	}
	report(t, problems)
}

func TestSlug(t *testing.T) {
	for _, c := range []struct{ heading, want, why string }{
		{"Fan-out in the background", "fan-out-in-the-background", "hyphens stay, spaces become hyphens"},
		{"The embedded broker under `kill -9`", "the-embedded-broker-under-kill--9", "backticks drop, each space is a hyphen"},
		{"Snapshots without locks (DBLog)", "snapshots-without-locks-dblog", "punctuation drops, letters lower-case"},
		{"The projector: newest version wins", "the-projector-newest-version-wins", "a colon drops"},
		{"invariant → file", "invariant--file", "a symbol drops and leaves its spaces"},
	} {
		if got := slug(c.heading); got != c.want {
			t.Errorf("slug(%q) = %q, want %q (%s)", c.heading, got, c.want, c.why)
		}
	}
}

var (
	backticked  = regexp.MustCompile("`([^`\n]+)`")
	testName    = regexp.MustCompile(`^Test[A-Z][A-Za-z0-9_]*$`)
	mdLink      = regexp.MustCompile(`\]\(([^()\s]+)\)`)
	heading     = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
	commentJoin = regexp.MustCompile(`\s*\n\s*(//)?\s*`)
	quotedRef   = regexp.MustCompile(`(docs/[A-Za-z0-9_/-]+\.md),? +"([^"]+)"`)
	fence       = regexp.MustCompile("(?s)```.*?```")
	pathExts    = []string{".go", ".md", ".yaml", ".yml", ".json", ".sql", ".mod", ".golden", ".png", ".properties"}
)

// isPath tells a backticked file or directory name from other code text.
func isPath(tok string) bool {
	if strings.ContainsAny(tok, " =()<>") || strings.HasPrefix(tok, "/") || strings.HasPrefix(tok, "-") {
		return false
	}
	last := tok[strings.LastIndex(tok, "/")+1:]
	for _, e := range pathExts {
		if strings.HasSuffix(last, e) {
			return true
		}
	}
	// A directory, or a file without an extension; a dot left means an
	// identifier such as internal/startup.IsConfigError.
	return strings.Contains(tok, "/") && !strings.Contains(last, ".")
}

// inTree tells a path of this repository (its first directory exists) from
// one of another project quoted in prose (vindexes/xxhash.go).
func inTree(tok string) bool {
	first, _, _ := strings.Cut(tok, "/")
	_, err := os.Stat(filepath.Join(root, first))
	return err == nil
}

// rowDirs are the package paths in the first cell of a package-map row.
func rowDirs(line string) []string {
	if !strings.HasPrefix(line, "| `") {
		return nil
	}
	cell := strings.SplitN(line, "|", 3)[1]
	var dirs []string
	for _, m := range backticked.FindAllStringSubmatch(cell, -1) {
		dirs = append(dirs, strings.TrimSuffix(m[1], "/"))
	}
	return dirs
}

func pathExists(tok string, dirs []string) bool {
	candidates := []string{tok}
	for _, d := range dirs {
		candidates = append(candidates, filepath.Join(d, tok))
	}
	for _, c := range candidates {
		if matches, _ := filepath.Glob(filepath.Join(root, c)); len(matches) > 0 {
			return true
		}
	}
	return false
}

// testNames are the Test functions of every _test.go in the tree.
func testNames(t *testing.T) map[string]bool {
	decl := regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]*)\(`)
	names := map[string]bool{}
	for _, f := range files(t, "_test.go") {
		for _, m := range decl.FindAllStringSubmatch(read(t, f), -1) {
			names[m[1]] = true
		}
	}
	return names
}

// files are the tree's files ending in suffix, slash paths from the root:
// what git tracks, so neither test data nor what a run leaves behind
// (.gitignore: the test bed's and demo's data, benchall's latest results).
func files(t *testing.T, suffix string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || untracked[rel] {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, suffix) && !(strings.HasPrefix(rel, "bench/results/") && !strings.HasPrefix(rel, "bench/results/history/")) {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// untracked are the directories .gitignore names.
var untracked = map[string]bool{"bin": true, "data": true}

var anchorCache = map[string]map[string]bool{}

// anchors are the GitHub anchors of a markdown file's headings, with the
// -1, -2 suffixes GitHub gives repeated headings.
func anchors(t *testing.T, md string) map[string]bool {
	if a, ok := anchorCache[md]; ok {
		return a
	}
	a := map[string]bool{}
	for _, h := range headings(t, md) {
		s := slug(h)
		if !a[s] {
			a[s] = true
			continue
		}
		for i := 1; ; i++ {
			if s2 := fmt.Sprintf("%s-%d", s, i); !a[s2] {
				a[s2] = true
				break
			}
		}
	}
	anchorCache[md] = a
	return a
}

func headings(t *testing.T, md string) []string {
	var hs []string
	for _, m := range heading.FindAllStringSubmatch(stripCode(read(t, md)), -1) {
		hs = append(hs, m[1])
	}
	return hs
}

func hasHeadingPrefix(t *testing.T, md, section string) bool {
	for _, h := range headings(t, md) {
		if strings.HasPrefix(strings.ReplaceAll(h, "`", ""), strings.ReplaceAll(section, "`", "")) {
			return true
		}
	}
	return false
}

// slug is GitHub's heading anchor: lower case, letters, digits, '-' and
// '_' kept, each space a '-', everything else dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// stripCode drops fenced code blocks, whose lines are neither headings nor
// links.
func stripCode(s string) string { return fence.ReplaceAllString(s, "") }

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return string(b)
}

func report(t *testing.T, problems []error) {
	t.Helper()
	for _, p := range problems {
		t.Error(p)
	}
}

// TestOperationsContents: docs/operations.md is long, so its contents at
// the top link every ## section, in order (links that resolve are
// TestMarkdownLinksResolve's).
func TestOperationsContents(t *testing.T) {
	const doc = "docs/operations.md"
	text := stripCode(read(t, doc))
	top, _, _ := strings.Cut(text, "\n## ")
	var want, got []string
	for _, m := range regexp.MustCompile(`(?m)^## +(.+?) *$`).FindAllStringSubmatch(text, -1) {
		want = append(want, slug(m[1]))
	}
	for _, m := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(top, -1) {
		got = append(got, m[1])
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: the contents at the top link %v; the ## sections are %v: regenerate the contents", doc, got, want)
	}
}

// TestMapsStayShort: the map and the benchmarks page are read whole, so
// they stay under 400 lines; an argument belongs in docs/design/, a past
// figure or tuning entry in bench/results/history/.
func TestMapsStayShort(t *testing.T) {
	for doc, fix := range map[string]string{
		"docs/ARCHITECTURE.md": "move the argument to a file under docs/design/ and link it",
		"docs/benchmarks.md":   "move past runs, tuning entries and session analyses to bench/results/history/",
	} {
		if n := strings.Count(read(t, doc), "\n"); n > 400 {
			t.Errorf("%s has %d lines, over 400: %s", doc, n, fix)
		}
	}
}
