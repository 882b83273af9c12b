package e2e

// The status page at / as a person sees it: rendered by a real headless
// browser (Debian's chromium), the screenshot's pixels and the rendered
// DOM inspected, healthy and with a projection stopped by a breaking DDL.

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/readside/readside/e2e/testbed"
)

// browser is headless chromium pointed at pages.
type browser struct {
	t    *testing.T
	path string
	dir  string // its profile: its own, so parallel runs do not share one
}

// newBrowser finds chromium (installed by `make testbed-install`, or here
// when root). Without it the test skips, except in CI, where a missing
// browser would silently leave the page untested.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	p, err := testbed.Chromium(t.Context())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no chromium to check the status page in: %v (`make testbed-install` as root installs it)", err)
		}
		t.Skipf("the status page is not checked in a browser: %v", err)
	}
	return &browser{t: t, path: p, dir: t.TempDir()}
}

func (b *browser) run(args ...string) []byte {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.t.Context(), time.Minute)
	defer cancel()
	args = append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--user-data-dir=" + b.dir}, args...)
	cmd := exec.CommandContext(ctx, b.path, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		b.t.Fatalf("chromium %s: %v\n%s", strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// screenshot renders url at 1200x900 and decodes the PNG.
func (b *browser) screenshot(url string) (image.Image, []byte) {
	b.t.Helper()
	file := filepath.Join(b.t.TempDir(), "page.png")
	b.run("--screenshot="+file, "--window-size=1200,900", url)
	data, err := os.ReadFile(file)
	if err != nil {
		b.t.Fatalf("chromium wrote no screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		b.t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	return img, data
}

// dom is the page's DOM after load, serialized.
func (b *browser) dom(url string) string {
	b.t.Helper()
	return string(b.run("--dump-dom", url))
}

// pixels counts the red-ish pixels (the "bad" badges and the stopped
// projection's bar, #d32f2f) and those that are not white.
func pixels(img image.Image) (red, inked int) {
	r := img.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			cr, cg, cb = cr>>8, cg>>8, cb>>8
			if cr >= 180 && cg <= 90 && cb <= 90 {
				red++
			}
			if cr < 240 || cg < 240 || cb < 240 {
				inked++
			}
		}
	}
	return red, inked
}

// domText is s as the serialized DOM holds it in a text node.
var domText = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "\u00a0", "&nbsp;")

// section is the <section id=id> of dom, or "".
func section(dom, id string) string {
	i := strings.Index(dom, `<section id="`+id+`">`)
	if i < 0 {
		return ""
	}
	j := strings.Index(dom[i:], "</section>")
	if j < 0 {
		return dom[i:]
	}
	return dom[i : i+j]
}

// TestStatusPage: the page at / in chromium. Healthy: the projections
// consuming with their lag charts, nothing red, no stopped section. Then
// the source drops a column messages_extra projects: it stops, and the
// page shows it in red in its own section with the reason and the fix
// that /status gives. E2E_STATUS_PAGE_PNG=FILE keeps the stopped page's
// screenshot (docs/images/status-page.png is one).
func TestStatusPage(t *testing.T) {
	testbed.Get(t) // skips without E2E, before a browser is looked for
	br := newBrowser(t)
	const extra = `  messages_extra:
    from: SRC.messages
    sink: reads
    key: [id]
    columns: {id: id, body: body, extra: extra}
`
	r := newIsolationRig(t, "statuspage", extra)
	ctx := t.Context()
	if err := r.bed.MySQL.Exec(ctx, fmt.Sprintf("ALTER TABLE `%s`.messages ADD COLUMN extra VARCHAR(20) NOT NULL DEFAULT 'x'", r.src)); err != nil {
		t.Fatal(err)
	}
	r.insert(1, 20, 10)
	r.d = r.start()
	r.waitReady(120 * time.Second)
	r.waitState("messages_extra", "consuming", time.Minute)
	url := "http://" + r.httpAddr + "/"

	img, _ := br.screenshot(url)
	red, inked := pixels(img)
	area := img.Bounds().Dx() * img.Bounds().Dy()
	if inked < area/100 {
		t.Errorf("healthy: the screenshot is blank (%d of %d pixels not white)", inked, area)
	}
	if red > 0 {
		t.Errorf("healthy: %d red pixels in the screenshot, want none (red is for what a person must act on)", red)
	}
	dom := br.dom(url)
	for _, p := range []string{"messages_by_sender", "messages_extra"} {
		if !strings.Contains(dom, "<td>"+p+"</td>") || !strings.Contains(dom, "<td>projector "+p+"</td>") {
			t.Errorf("healthy: the page does not list projection %s and its projector:\n%s", p, dom)
		}
	}
	if !strings.Contains(dom, `<span class="badge ok">consuming</span>`) || !strings.Contains(dom, "<polyline") {
		t.Errorf("healthy: no consuming badge or no lag chart in the page:\n%s", dom)
	}
	if s := section(dom, "stopped"); s != "" {
		t.Errorf("healthy: the page shows a stopped section:\n%s", s)
	}

	if err := r.bed.MySQL.Exec(ctx, fmt.Sprintf("ALTER TABLE `%s`.messages DROP COLUMN extra", r.src)); err != nil {
		t.Fatal(err)
	}
	r.insert(21, 30, 10)
	stopped := r.waitState("messages_extra", "stopped", 2*time.Minute)
	if stopped.StopReason == "" || stopped.Fix == "" {
		t.Fatalf("/status of the stopped projection lacks the reason or the fix: %+v", stopped)
	}

	img, data := br.screenshot(url)
	if red, _ := pixels(img); red < 200 {
		t.Errorf("stopped: %d red pixels in the screenshot, want the stopped badges (at least 200)", red)
	}
	if out := os.Getenv("E2E_STATUS_PAGE_PNG"); out != "" {
		if err := os.WriteFile(out, data, 0o644); err != nil {
			t.Error(err)
		}
	}
	dom = br.dom(url)
	s := section(dom, "stopped")
	var missing []string
	for what, want := range map[string]string{
		"name":   `<span class="proj-name">messages_extra</span> <span class="badge bad">stopped</span>`,
		"reason": domText.Replace(stopped.StopReason),
		"fix":    domText.Replace(stopped.Fix),
	} {
		if !strings.Contains(s, want) {
			missing = append(missing, fmt.Sprintf("its %s %q", what, want))
		}
	}
	if len(missing) > 0 {
		t.Errorf("stopped: the page's stopped section lacks the stopped projection's\n%s\nsection: %q\npage:\n%s", strings.Join(missing, "\n"), s, dom)
	}
	// The charts draw the samples the daemon keeps (one per 5 s) and the
	// report of the moment: more than one point by now.
	if !regexp.MustCompile(`<polyline points="[0-9.,]+ [0-9.,]+`).MatchString(dom) {
		t.Errorf("stopped: no lag chart with more than one point: is the daemon sampling the report (RecordHistory)?\n%s", dom)
	}
	if strings.Contains(s, "messages_by_sender") {
		t.Errorf("stopped: the healthy projection is in the stopped section:\n%s", s)
	}
	if code := r.d.stop(30 * time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM, want 0", code)
	}
}
