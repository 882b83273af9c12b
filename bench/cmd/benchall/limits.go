package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/readside/readside/bench/internal/benchio"
)

// The limits B0, B1 and B2 are their own programs (bench/rawparse,
// bench/rawproduce, bench/rawupsert), run as child processes so that
// their CPU time and memory are their own, like readside's; each prints
// one JSON line (bench/internal/benchio.Result).

// limitSweep is B2's batch rows x connections sweep; make bench-quick
// keeps to the first three points to stay within its 3 minutes.
var limitSweep = "1000x1,5000x1,2000x2,5000x2,5000x4"

const quickSweep = "1000x1,5000x1,5000x2"

// productDir is the readside checkout: the product's module, which
// bench's go.mod replaces with its parent directory. readside is built in
// its own module so that the binary measured has the product's go.mod
// versions, not the bench module's; so benchall runs from either module.
func productDir() (string, error) {
	b, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/readside/readside").Output()
	if err != nil {
		return "", fmt.Errorf("finding the readside module (run benchall inside the readside checkout): %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// buildLimits builds the three limit programs into the bench directory.
func (e *env) buildLimits(product string) error {
	cmd := exec.Command("go", "build", "-o", e.dir+"/", "./rawparse", "./rawproduce", "./rawupsert")
	cmd.Dir = filepath.Join(product, "bench")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the limit programs: %v\n%s", err, b)
	}
	return nil
}

// limitResult is a limit program's JSON line.
type limitResult struct {
	rate
	Events     int       `json:"events"`
	Sweep      []b2Point `json:"sweep"`
	ReadRows   int64     `json:"read_rows"`   // rawupsert -joins
	JoinedRows []int64   `json:"joined_rows"` // rawupsert -joins
	Checksum   int64     `json:"checksum"`    // rawupsert -aggregate (ReadRows: its group rows)
	// rawupsert -arrays: the read rows with arrays it left, summed by
	// benchio.ChildrenChecksum.
	ArrayRows     int64 `json:"array_rows"`
	ArrayChecksum int64 `json:"array_checksum"`
	// Settles: rawupsert's waits for MariaDB before each point (-settle).
	Settles []benchio.Settle `json:"settles"`
}

// runLimit runs one limit program and decodes its result.
func (e *env) runLimit(ctx context.Context, prog string, args ...string) (limitResult, error) {
	var res limitResult
	cmd := exec.CommandContext(ctx, filepath.Join(e.dir, prog), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	logf("%s %s", prog, strings.Join(args, " "))
	if err := cmd.Run(); err != nil {
		return res, fmt.Errorf("%s: %v\n%s", prog, err, stderr.Bytes())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		return res, fmt.Errorf("%s printed %q: %w", prog, stdout.String(), err)
	}
	e.settles = append(e.settles, res.Settles...)
	return res, nil
}
