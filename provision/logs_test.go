package provision

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLocalLogs(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("a line of the target's log\n", 100) // 2,700 bytes
	if err := os.WriteFile(filepath.Join(dir, "target.log"), []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "postgres.log"), []byte("database system is ready\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l := NewLocal(Options{DataDir: t.TempDir()})
	env := Environment{ID: "e", Provider: "local", EnvDir: dir, Database: &DatabaseEndpoint{Kind: "postgres", Process: Process{PID: 1}}}
	outs, err := l.Logs(context.Background(), env, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 2 || outs[0].Source != LogTarget || outs[1].Source != LogDatabase {
		t.Fatalf("outputs %+v", outs)
	}
	if !outs[0].Truncated || len(outs[0].Text) > 1000 || !strings.HasPrefix(string(outs[0].Text), "a line") || !strings.HasSuffix(string(outs[0].Text), "log\n") {
		t.Errorf("target: truncated %v, %d bytes, %q…; want the last whole lines within 1000 bytes", outs[0].Truncated, len(outs[0].Text), string(outs[0].Text[:20]))
	}
	if outs[1].Truncated || string(outs[1].Text) != "database system is ready\n" {
		t.Errorf("database: %+v", outs[1])
	}
	// Gone (a retried teardown after the directory was removed): nothing.
	if outs, err := l.Logs(context.Background(), Environment{ID: "e", EnvDir: filepath.Join(dir, "gone")}, 1000); err != nil || len(outs) != 0 {
		t.Errorf("a removed environment: %+v, %v", outs, err)
	}
}
