package provision

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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

// A local target's output is cut by window with the marks the drive left:
// a real process writes its own output file (as a local target does), the
// marks are taken as windows close, and a provider that did not take them
// (another worker, after the first was killed) cuts the kept text by them.
func TestLocalOutputByWindow(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "target.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	dbLog := filepath.Join(dir, "postgres.log")
	if err := os.WriteFile(dbLog, []byte("incarnation 1's database line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// cat copies what the test writes to its stdin into the output file
	// itself: the process, not the test, writes the file.
	cat := exec.Command("cat")
	cat.Stdout = out
	in, err := cat.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Start(); err != nil {
		t.Fatal(err)
	}
	defer cat.Wait()
	defer in.Close()
	written := 0
	print := func(s string) {
		t.Helper()
		if _, err := io.WriteString(in, s); err != nil {
			t.Fatal(err)
		}
		written += len(s)
		deadline := time.Now().Add(10 * time.Second)
		for {
			if fi, err := os.Stat(out.Name()); err == nil && fi.Size() == int64(written) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the process did not write %q", s)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	env := Environment{ID: "e", Provider: "local", Incarnation: 2, EnvDir: dir,
		Database: &DatabaseEndpoint{Kind: "postgres", Process: Process{PID: cat.Process.Pid}}}
	worker1 := NewLocal(Options{DataDir: t.TempDir()})
	mark := func(index int, end bool) {
		t.Helper()
		if err := worker1.MarkOutput(context.Background(), env, index, end); err != nil {
			t.Fatal(err)
		}
	}
	print("starting\n") // before the first window
	mark(4, false)
	print("window 4 a\nwindow 4 b\n")
	mark(4, true)
	print("window 5\nwindow 5 begins a line ")
	mark(5, true) // mid-line: the line is window 5's, where it began
	print("that ends in window 6\n")
	mark(6, true)
	mark(7, true) // printed nothing
	print("window 8, in progress when its worker was killed\n")
	if err := os.WriteFile(dbLog, []byte("incarnation 1's database line\nincarnation 2's\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	worker2 := NewLocal(Options{DataDir: t.TempDir()})
	outs, err := worker2.ReadOutput(context.Background(), env, LogRequest{MaxBytes: 1 << 20, DatabaseFrom: "offset:30"})
	if err != nil || len(outs) != 2 {
		t.Fatalf("ReadOutput = %+v, %v", outs, err)
	}
	target := outs[0]
	want := map[int]string{4: "window 4 a\nwindow 4 b\n", 5: "window 5\nwindow 5 begins a line that ends in window 6\n", 6: "", 7: ""}
	if len(target.Windows) != len(want) {
		t.Errorf("windows %+v, want 4–7 (8 has no end mark)", target.Windows)
	}
	for _, w := range target.Windows {
		if got := string(target.Text[w.From:w.To]); got != want[w.Index] {
			t.Errorf("window %d = %q, want %q", w.Index, got, want[w.Index])
		}
	}
	db := outs[1]
	if string(db.Text) != "incarnation 2's\n" || db.Cursor != "offset:46" {
		t.Errorf("database output %q read to %q; want incarnation 2's line only, to offset:46", db.Text, db.Cursor)
	}

	// Only the end kept: the windows before it have no lines, the one cut
	// keeps its end.
	outs, err = worker2.ReadOutput(context.Background(), env, LogRequest{MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	target = outs[0]
	if !target.Truncated || len(target.Windows) == 0 || target.Windows[0].Index == 4 {
		t.Errorf("cut to 100 bytes: truncated %v, windows %+v; want window 4 gone", target.Truncated, target.Windows)
	}
	for _, w := range target.Windows {
		if w.From < 0 || w.To > len(target.Text) || w.From > w.To {
			t.Errorf("window %+v outside the %d kept bytes", w, len(target.Text))
		}
	}
}
