package provision

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/internal/lockedbuf"
)

// Following a local environment's output shows the end of what was
// printed (from a line start), then each new line, and stops when the
// environment's directory is removed at teardown.
func TestLocalFollowLogs(t *testing.T) {
	dir := t.TempDir()
	envDir := filepath.Join(dir, "env")
	if err := os.Mkdir(envDir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(envDir, "target.log")
	var before strings.Builder
	for i := range 1000 { // ~24 KiB: more than followTail
		fmt.Fprintf(&before, "earlier line %04d\n", i)
	}
	if err := os.WriteFile(path, []byte(before.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	l := NewLocal(Options{})
	env := Environment{ID: "e1", Provider: "local", EnvDir: envDir}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out lockedbuf.Buffer
	done := make(chan error, 1)
	go func() { done <- l.FollowLogs(ctx, env, LogTarget, &out) }()

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		fmt.Fprintf(f, "new line %d\n", i)
		time.Sleep(3 * followPoll / 2)
	}
	f.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "new line 2\n") && time.Now().Before(deadline) {
		time.Sleep(followPoll)
	}
	if err := os.RemoveAll(envDir); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("FollowLogs did not stop after the environment's directory was removed")
	}
	got := out.String()
	if !strings.HasPrefix(got, "earlier line ") {
		t.Errorf("output does not start at a line start: %.40q", got)
	}
	if strings.Contains(got, "earlier line 0000\n") || !strings.Contains(got, "earlier line 0999\nnew line 0\nnew line 1\nnew line 2\n") {
		t.Errorf("want the end of the earlier output and then the new lines, got %d bytes ending %q", len(got), got[max(0, len(got)-80):])
	}
	if len(got) > followTail+100 {
		t.Errorf("showed %d bytes of earlier output, want at most about %d", len(got), followTail)
	}

	// No database process of longhaul's: a clear error, not a hang.
	if err := l.FollowLogs(ctx, env, LogDatabase, &out); err == nil || !strings.Contains(err.Error(), "no database") {
		t.Errorf("database of an environment without one: %v", err)
	}
}
