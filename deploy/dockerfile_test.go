package deploy

import (
	"bufio"
	"debug/elf"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	cmd, args string
	line      int
}

// stage is one FROM ... section.
type stage struct {
	image, name string
	ins         []instruction
}

var dockerInstructions = []string{"ADD", "ARG", "CMD", "COPY", "ENTRYPOINT", "ENV", "EXPOSE", "FROM",
	"HEALTHCHECK", "LABEL", "ONBUILD", "RUN", "SHELL", "STOPSIGNAL", "USER", "VOLUME", "WORKDIR"}

// parseDockerfile is a small Dockerfile reader: comments, blank lines and
// backslash continuations, one instruction per logical line, grouped in
// stages. Heredocs are not supported (the Dockerfile uses none).
func parseDockerfile(t *testing.T, path string) []stage {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []stage
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue // a comment inside a continuation is skipped too, as docker does
		}
		if cur.Len() == 0 {
			start = n
		}
		if s, ok := strings.CutSuffix(line, "\\"); ok {
			cur.WriteString(s + " ")
			continue
		}
		cur.WriteString(line)
		cmd, args, _ := strings.Cut(cur.String(), " ")
		cur.Reset()
		in := instruction{strings.ToUpper(cmd), strings.TrimSpace(args), start}
		if !slices.Contains(dockerInstructions, in.cmd) {
			t.Fatalf("%s:%d: unknown instruction %q", path, start, cmd)
		}
		if strings.Contains(in.args, "<<") {
			t.Fatalf("%s:%d: heredocs are not understood by this test's parser", path, start)
		}
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			st := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				st.name = f[2]
			} else if len(f) != 1 {
				t.Fatalf("%s:%d: FROM %s: want image [AS name]", path, start, in.args)
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("%s:%d: %s before the first FROM", path, start, in.cmd)
			}
			continue
		}
		stages[len(stages)-1].ins = append(stages[len(stages)-1].ins, in)
	}
	if cur.Len() > 0 {
		t.Fatalf("%s: ends inside a continuation line", path)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

func (s stage) all(cmd string) []instruction {
	var out []instruction
	for _, in := range s.ins {
		if in.cmd == cmd {
			out = append(out, in)
		}
	}
	return out
}

func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	var v []string
	if err := json.Unmarshal([]byte(in.args), &v); err != nil {
		t.Errorf("Dockerfile:%d: %s %s is not the JSON exec form; the final image has no shell to run the shell form", in.line, in.cmd, in.args)
	}
	return v
}

// goBuild is the build stage's go build command, with its -o path.
var goBuild = regexp.MustCompile(`^CGO_ENABLED=0 go build -trimpath -ldflags "-s -w[^"]*" -o (\S+) \./cmd/readside$`)

// dockerBuild checks the Dockerfile's structure and returns the build
// stage's go build command, its ARG defaults and the binary's path in the
// build stage.
func dockerBuild(t *testing.T) (cmd string, args map[string]string, out string) {
	t.Helper()
	stages := parseDockerfile(t, "Dockerfile")
	if len(stages) != 2 {
		t.Fatalf("Dockerfile: %d stages, want build + final", len(stages))
	}
	build, final := stages[0], stages[1]
	if build.image != "golang:1.26" || build.name != "build" {
		t.Errorf("Dockerfile: first stage %s AS %s, want golang:1.26 AS build", build.image, build.name)
	}
	gomod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	// The official image sets GOTOOLCHAIN=local: go.mod may not ask for a newer Go.
	if m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(gomod); m == nil || "golang:"+string(m[1]) != build.image {
		t.Errorf("go.mod's go line %q does not match the build image %s", m, build.image)
	}
	args = map[string]string{}
	for _, a := range build.all("ARG") {
		k, v, _ := strings.Cut(a.args, "=")
		args[k] = v
	}
	for _, r := range build.all("RUN") {
		if m := goBuild.FindStringSubmatch(r.args); m != nil {
			cmd, out = r.args, m[1]
		}
	}
	if cmd == "" {
		t.Fatalf("Dockerfile: the build stage has no RUN matching %s", goBuild)
	}

	if !strings.HasPrefix(final.image, "gcr.io/distroless/static") && final.image != "scratch" {
		t.Errorf("Dockerfile: final image %s, want distroless/static or scratch", final.image)
	}
	if r := final.all("RUN"); len(r) > 0 {
		t.Errorf("Dockerfile:%d: RUN in the final stage; it has no shell", r[0].line)
	}
	var bin string
	for _, c := range final.all("COPY") {
		f := strings.Fields(c.args)
		if len(f) == 3 && f[0] == "--from=build" {
			if f[1] != out {
				t.Errorf("Dockerfile:%d: copies %s from the build stage, which writes %s", c.line, f[1], out)
			}
			bin = f[2]
		}
	}
	users := final.all("USER")
	if len(users) == 0 {
		t.Error("Dockerfile: the final stage sets no USER: it would run as root")
	} else if u, _, _ := strings.Cut(users[len(users)-1].args, ":"); u == "0" || u == "root" || !regexp.MustCompile(`^[1-9][0-9]*$`).MatchString(u) {
		t.Errorf("Dockerfile: USER %s: want a numeric non-root uid (runAsNonRoot can only verify numbers)", u)
	}
	if e := final.all("EXPOSE"); len(e) != 1 || e[0].args != "9100" {
		t.Errorf("Dockerfile: EXPOSE %v, want 9100", e)
	}
	ep, cmdIns := final.all("ENTRYPOINT"), final.all("CMD")
	if len(ep) != 1 || len(cmdIns) != 1 {
		t.Fatalf("Dockerfile: want one ENTRYPOINT and one CMD in the final stage")
	}
	if v := execForm(t, ep[0]); len(v) != 1 || v[0] != bin || filepath.Base(bin) != "readside" {
		t.Errorf("Dockerfile: ENTRYPOINT %v, want [%s] (the copied readside binary)", v, bin)
	}
	want := []string{"run", "-c", configPath, "--http", ":9100"}
	if v := execForm(t, cmdIns[0]); !slices.Equal(v, want) {
		t.Errorf("Dockerfile: CMD %q, want %q", v, want)
	}
	return cmd, args, out
}

func TestDockerfile(t *testing.T) { dockerBuild(t) }

// dockerignore reads the root .dockerignore. Only plain patterns are
// understood (no "!" exceptions, no "**"); for those, Docker excludes a path
// when a pattern matches it or one of its parent directories.
func dockerignore(t *testing.T) func(rel string) bool {
	t.Helper()
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "!") || strings.Contains(l, "**") {
			t.Fatalf(".dockerignore pattern %q: this test's matcher does not understand it; extend dockerignore()", l)
		}
		pats = append(pats, filepath.Clean(strings.TrimPrefix(l, "/")))
	}
	return func(rel string) bool {
		for p := rel; p != "." && p != "/"; p = filepath.Dir(p) {
			for _, pat := range pats {
				if ok, _ := filepath.Match(pat, p); ok {
					return true
				}
			}
		}
		return false
	}
}

// TestDockerBuildStage runs the Dockerfile's go build command, as written,
// on a copy of the build context (the repository less .dockerignore), with
// -mod=readonly (go.mod and go.sum must be complete, as the image's go mod
// download needs) and the image's GOTOOLCHAIN=local, and checks the result
// is a static, stripped binary that runs.
func TestDockerBuildStage(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles readside from scratch (-trimpath); skipped with -short")
	}
	cmd, args, out := dockerBuild(t)
	ignored := dockerignore(t)
	ctx := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	copied := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return nil
		}
		if ignored(rel) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		dst := filepath.Join(ctx, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		copied++
		return copyFile(path, dst)
	})
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "readside")
	c := exec.Command("sh", "-c", strings.ReplaceAll(cmd, out, bin))
	c.Dir = ctx
	c.Env = append(os.Environ(), "GOFLAGS=-mod=readonly", "GOTOOLCHAIN=local")
	for k, v := range args {
		c.Env = append(c.Env, k+"="+v)
	}
	if b, err := c.CombinedOutput(); err != nil {
		t.Fatalf("the Dockerfile's build command on the build context (%d files): %v\n%s", copied, err, b)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary has a dynamic loader (PT_INTERP): it would not run on distroless/static")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v", libs)
	}
	if f.Section(".symtab") != nil {
		t.Error("the binary has a symbol table: -ldflags -s was not applied")
	}
	v, err := exec.Command(bin, "version").Output()
	if err != nil || !strings.HasPrefix(string(v), "readside "+args["VERSION"]+" ") {
		t.Errorf("readside version: %q, %v; want the VERSION build arg %q", v, err, args["VERSION"])
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
