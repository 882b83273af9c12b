package testbed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// installDataDir fills dataDir with a new MariaDB data directory, as
// mariadb-install-db makes it. The install spends seconds waiting on
// fsyncs (9 s of wall time for 0.7 s of CPU on the loaded CI box) and its
// result is the same for every server of one MariaDB installation, while
// a CI run starts dozens of servers; so it runs once per installation
// into the user cache dir, and every server starts from a copy (half a
// second). Nothing has ever started on the cached directory. If the
// cache cannot be used the install runs into dataDir as before.
func installDataDir(ctx context.Context, installDB, mariadbd, dataDir, tmpDir string) error {
	args := installArgs()
	tmpl, err := dataDirTemplate(ctx, installDB, mariadbd, args)
	if err == nil {
		if err = os.CopyFS(dataDir, os.DirFS(tmpl)); err == nil {
			return nil
		}
		_ = os.RemoveAll(dataDir)
	}
	return runInstallDB(ctx, installDB, dataDir, tmpDir, args)
}

// installArgs are mariadb-install-db's options apart from its directories.
func installArgs() []string {
	return []string{"--no-defaults", "--user=" + currentUser(), "--auth-root-authentication-method=normal", "--skip-test-db"}
}

func runInstallDB(ctx context.Context, installDB, dataDir, tmpDir string, args []string) error {
	install := exec.CommandContext(ctx, installDB, append(args, "--datadir="+dataDir, "--tmpdir="+tmpDir)...)
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("mariadb-install-db into %s: %w\n%s", dataDir, err, out)
	}
	return nil
}

// dataDirTemplate returns the cached data directory of this MariaDB
// installation (both binaries' path, size and modification time, and the
// install's options name it), installing it first if it is missing. A
// template is renamed into place only once complete, so a process that
// sees one can copy it; of two processes installing at once, one keeps
// its result.
func dataDirTemplate(ctx context.Context, installDB, mariadbd string, args []string) (string, error) {
	h := sha256.New()
	for _, bin := range []string{installDB, mariadbd} {
		st, err := os.Stat(bin)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s %d %d\n", bin, st.Size(), st.ModTime().UnixNano())
	}
	fmt.Fprintln(h, strings.Join(args, " "))
	dir := filepath.Join(userCacheDir(), "readside-testbed", "mariadb-datadir-"+hex.EncodeToString(h.Sum(nil)[:8]))
	data := filepath.Join(dir, "data")
	mark := filepath.Join(dir, "complete")
	if _, err := os.Stat(mark); err == nil {
		return data, nil
	}
	// A template is renamed into place with its mark, so one without it
	// was damaged afterwards: replace it (but not one another process
	// renamed into place since the look above).
	if _, err := os.Stat(dir); err == nil {
		if _, err := os.Stat(mark); err == nil {
			return data, nil
		}
		if err := os.RemoveAll(dir); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	build, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".tmp"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(build)
	if err := os.MkdirAll(filepath.Join(build, "tmp"), 0o755); err != nil {
		return "", err
	}
	if err := runInstallDB(ctx, installDB, filepath.Join(build, "data"), filepath.Join(build, "tmp"), args); err != nil {
		return "", err
	}
	if err := os.RemoveAll(filepath.Join(build, "tmp")); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(build, "complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(build, dir); err != nil {
		// Another process put its template there first: use that one.
		if _, serr := os.Stat(mark); serr != nil {
			return "", err
		}
	}
	return data, nil
}
