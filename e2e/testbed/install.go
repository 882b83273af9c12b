package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// A fresh machine may lack the servers the test bed runs. When the test bed
// runs as root it installs the Debian packages itself (that is what makes
// `make test` work on a clean clone); otherwise it says which package to
// install.

var installMu sync.Mutex

// ensureCommand returns the path of the first of names found on PATH or in
// the sbin directories, installing debPackages with apt-get when none is
// found and the process runs as root.
func ensureCommand(ctx context.Context, debPackages []string, names ...string) (string, error) {
	installMu.Lock()
	defer installMu.Unlock()
	if p := lookCommand(names...); p != "" {
		return p, nil
	}
	if os.Geteuid() != 0 {
		return "", fmt.Errorf("%s not found: install the Debian package(s) %s (apt-get install %s) or run the tests as root so the test bed installs them",
			names[0], strings.Join(debPackages, ", "), strings.Join(debPackages, " "))
	}
	if err := aptInstall(ctx, debPackages...); err != nil {
		return "", err
	}
	if p := lookCommand(names...); p != "" {
		return p, nil
	}
	return "", fmt.Errorf("%s still not found after installing %s", names[0], strings.Join(debPackages, " "))
}

// EnsureCommand is ensureCommand for tools the test bed itself does not
// run (the bench's sysbench): the path of the first of names, installing
// debPackages when missing and running as root, else an error naming the
// package to install.
func EnsureCommand(ctx context.Context, debPackages []string, names ...string) (string, error) {
	return ensureCommand(ctx, debPackages, names...)
}

func lookCommand(names ...string) string {
	for _, n := range names {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
			p := dir + "/" + n
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return p
			}
		}
	}
	return ""
}

func aptInstall(ctx context.Context, pkgs ...string) error {
	update := exec.CommandContext(ctx, "apt-get", "-o", "DPkg::Lock::Timeout=300", "update", "-qq")
	if out, err := update.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update: %w\n%s", err, out)
	}
	// Wait for another apt/dpkg run (a parallel test binary, unattended
	// upgrades) instead of failing on its lock.
	args := append([]string{"-o", "DPkg::Lock::Timeout=300", "install", "-y", "-qq", "--no-install-recommends"}, pkgs...)
	install := exec.CommandContext(ctx, "apt-get", args...)
	// policy-rc.d on minimal images stops the package from starting its own
	// server; the test bed starts private instances instead.
	install.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := install.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %w\n%s", strings.Join(pkgs, " "), err, out)
	}
	return nil
}

// Promtool returns the path of Prometheus's promtool, installing Debian's
// prometheus package when it is missing and the process runs as root: the
// alert rules are unit-tested with it (deploy/, e2e TestLagBothWays).
func Promtool(ctx context.Context) (string, error) {
	return ensureCommand(ctx, []string{"prometheus"}, "promtool")
}

// Chromium returns the path of Debian's chromium, installing it when it
// is missing and the process runs as root: the status page is checked
// in it, headless (e2e TestStatusPage).
func Chromium(ctx context.Context) (string, error) {
	return ensureCommand(ctx, []string{"chromium"}, "chromium")
}
