package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestQuickStartInTmux runs the README's quick start as a newcomer would,
// in a real terminal (tmux, read back with capture-pane): the README's
// scenario block, as written but for the port of the stand-in API and a
// shorter run, then `longhaul run api.yaml`. The terminal must show what the
// README says it shows — the run line, the live charts address, numbered
// window lines, the summary overall and per op, the status, the findings —
// and nothing a person should not have to read (no key=value log records).
func TestQuickStartInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end run in a terminal")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed (apt-get install tmux)")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	scenario := quickStartScenario(t, string(readme))
	if !strings.Contains(string(readme), "```sh\nlonghaul run api.yaml\n```") {
		t.Fatal("the README's quick start no longer runs `longhaul run api.yaml`")
	}
	url := startDemoTarget(t)
	dir := t.TempDir()
	scenario = strings.Replace(scenario, "http://127.0.0.1:8080", url, 1)
	if err := os.WriteFile(filepath.Join(dir, "api.yaml"), []byte(scenario), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// longhaul is this test binary (TestMain runs main when
	// LONGHAUL_TEST_MAIN=1); HOME is the test's, so the default store
	// path is the one the README shows.
	home := t.TempDir()
	session := fmt.Sprintf("longhaul-quickstart-%d", os.Getpid())
	shell := fmt.Sprintf("cd %q && HOME=%q LONGHAUL_TEST_MAIN=1 %q run api.yaml --duration 6s --window 2s; echo EXIT=$?; sleep 600",
		dir, home, exe)
	tmux := func(args ...string) string {
		out, err := exec.Command("tmux", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	tmux("new-session", "-d", "-s", session, "-x", "160", "-y", "60", shell)
	t.Cleanup(func() { _ = exec.Command("tmux", "kill-session", "-t", session).Run() })

	var screen string
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(screen, "EXIT=") {
		if time.Now().After(deadline) {
			t.Fatalf("the run did not end within 2 minutes; the terminal:\n%s", screen)
		}
		time.Sleep(500 * time.Millisecond)
		screen = tmux("capture-pane", "-p", "-t", session, "-S", "-200")
	}
	t.Logf("the terminal:\n%s", screen)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^run [0-9a-f-]{36}: my-api, 6s in 2s windows \(store ` + regexp.QuoteMeta(home) + `/\.local/share/longhaul/longhaul\.db\)$`),
		regexp.MustCompile(`(?m)^live charts: http://127\.0\.0\.1:\d+/runs/[0-9a-f-]{36}$`),
		regexp.MustCompile(`(?m)^\s+win elapsed\s+req/s\s+p50 ms\s+p99 ms\s+p99\.9 ms\s+max ms\s+errors\s+dropped\s+alloc/req\s+gc/1k req\s+heap MiB\s+gc p99$`),
		regexp.MustCompile(`(?m)^\s+0 0:00:02\s+\d`),
		regexp.MustCompile(`(?m)^\s+2 0:00:06`),
		regexp.MustCompile(`(?m)^summary: 3 windows, `),
		regexp.MustCompile(`(?m)^op\s+requests\s+req/s\s+p50 ms\s+p90 ms\s+p95 ms\s+p99 ms\s+p99\.9 ms\s+max ms\s+errors$`),
		regexp.MustCompile(`(?m)^list\s+\d+`),
		regexp.MustCompile(`(?m)^health\s+\d+`),
		regexp.MustCompile(`(?m)^run [0-9a-f-]{36} completed$`),
		regexp.MustCompile(`(?m)^findings:$`),
		regexp.MustCompile(`(?m)^  info missing_evidence: `),
		regexp.MustCompile(`(?m)^browse it later: longhaul ui, then open /runs/[0-9a-f-]{36}$`),
		regexp.MustCompile(`(?m)^EXIT=0$`),
	} {
		if !want.MatchString(screen) {
			t.Errorf("the terminal lacks %s", want)
		}
	}
	for _, noise := range []string{"level=", "time=", "msg="} {
		if strings.Contains(screen, noise) {
			t.Errorf("the terminal shows a log record (%q): a person reads it", noise)
		}
	}
}

// quickStartScenario is the README's quick-start scenario block.
func quickStartScenario(t *testing.T, readme string) string {
	t.Helper()
	_, rest, ok := strings.Cut(readme, "## Quick start")
	if !ok {
		t.Fatal("the README has no quick start")
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	if !ok {
		t.Fatal("the README's quick start has no yaml block")
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok || !strings.Contains(block, "name: my-api") {
		t.Fatalf("the quick start's yaml block is not the my-api scenario:\n%s", block)
	}
	return block
}
