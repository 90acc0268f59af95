package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// crashRun is n 10 s windows of 1,000 ok requests each in incarnation inc;
// events are added by the cases.
func crashRun(inc, n int, start time.Time) []window.Window {
	ws := make([]window.Window, n)
	for i := range ws {
		ws[i] = window.Window{
			Incarnation: inc, Index: i,
			Start: start.Add(time.Duration(i) * 10 * time.Second), End: start.Add(time.Duration(i+1) * 10 * time.Second),
			Requests: 1000, OK: 1000, RPS: 100, VUs: 4,
		}
	}
	return ws
}

func TestCrashFinding(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	code := func(c int) *int { return &c }
	output := make([]string, 80)
	for i := range output {
		output[i] = "line " + string(rune('a'+i%26))
	}
	tests := []struct {
		name        string
		ws          func() []window.Window
		wantCrashes int
		want        []string // in the first crash's summary
		wantWindow  int
		wantServed  float64
		wantNotes   map[string]float64
	}{
		{
			name:        "clean run",
			ws:          func() []window.Window { return crashRun(1, 12, t0) },
			wantCrashes: 0,
		},
		{
			name: "kill -9 in window 3",
			ws: func() []window.Window {
				ws := crashRun(1, 6, t0)
				// The target died 5 s into window 3: the rest of the
				// run is refused connections.
				ws[3].OK, ws[3].Errors = 500, window.Errors{Refused: 20, Reset: 3}
				ws[3].Requests = 523
				for i := 4; i < 6; i++ {
					ws[i].OK, ws[i].Requests, ws[i].Errors, ws[i].ConnectFailures = 0, 8, window.Errors{Refused: 8}, 8
				}
				ws[3].Events = []window.Event{{Kind: window.EventTargetExit, At: t0.Add(35 * time.Second), PID: 19419, Signal: 9,
					Detail: "the target process 19419 exited (signal 9: killed)", Output: output}}
				return ws
			},
			wantCrashes: 1,
			want:        []string{"was killed", "0:00:35 into the run (window 3)", "3,500 requests served", "signal 9: killed"},
			wantWindow:  3,
			wantServed:  3500,
			wantNotes:   map[string]float64{"signal": 9},
		},
		{
			name: "found stopped when a drive resumed",
			ws: func() []window.Window {
				// The worker died in window 4; the drive resuming on the
				// next worker found the target gone (its exit status
				// unknown: it was not that worker's child) and recorded
				// it in the lost window's gap.
				ws := crashRun(1, 5, t0)
				ws[4] = window.Window{Incarnation: 1, Index: 4, Gap: true, Start: t0.Add(40 * time.Second), End: t0.Add(75 * time.Second),
					Events: []window.Event{{Kind: window.EventTargetExit, PID: 19419, Detail: "the target process 19419 exited (exit status unknown)", Output: output[:3]}}}
				return ws
			},
			wantCrashes: 1,
			want:        []string{"the target stopped by 0:01:15 into the run (window 4, lost with its worker: found stopped when the drive resumed)", "4,000 requests served", "exit status unknown"},
			wantWindow:  4,
			wantServed:  4000,
			wantNotes:   map[string]float64{},
		},
		{
			name: "exit code in a warm-up window",
			ws: func() []window.Window {
				ws := crashRun(1, 10, t0)
				ws[0].Events = []window.Event{{Kind: window.EventTargetExit, At: t0.Add(4 * time.Second), ExitCode: code(2)}}
				return ws
			},
			wantCrashes: 1,
			want:        []string{"exited", "window 0", "exit code 2"},
			wantWindow:  0,
			wantServed:  1000,
			wantNotes:   map[string]float64{"exit_code": 2},
		},
		{
			name: "OOM kill, time unknown",
			ws: func() []window.Window {
				ws := crashRun(1, 10, t0)
				ws[7].Events = []window.Event{{Kind: window.EventTargetExit, Container: "abc", ExitCode: code(137), OOMKilled: true, OOMSource: "container state"}}
				return ws
			},
			wantCrashes: 1,
			want:        []string{"was killed", "0:01:20 into the run (window 7)", "exit code 137, out of memory (container state)"},
			wantWindow:  7,
			wantServed:  8000,
			wantNotes:   map[string]float64{"exit_code": 137, "oom_killed": 1},
		},
		{
			name: "a database exit is not a target crash",
			ws: func() []window.Window {
				ws := crashRun(1, 10, t0)
				ws[5].Events = []window.Event{{Kind: window.EventDatabaseExit, Signal: 9}}
				return ws
			},
			wantCrashes: 0,
		},
		{
			name: "each incarnation's crash",
			ws: func() []window.Window {
				a := crashRun(1, 4, t0)
				a[2].Events = []window.Event{{Kind: window.EventTargetExit, Signal: 9}}
				b := crashRun(2, 4, t0.Add(time.Minute))
				for i := range b {
					b[i].Index += 4
				}
				b[1].Events = []window.Event{{Kind: window.EventTargetExit, Signal: 6}}
				return append(a, b...)
			},
			wantCrashes: 2,
			want:        []string{"window 2", "signal 9"},
			wantWindow:  2,
			wantServed:  3000,
			wantNotes:   map[string]float64{"signal": 9},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Analyze(tt.ws(), Options{WarmupWindows: 2})
			var crashes []Finding
			for _, f := range res.Findings {
				if f.Kind == KindCrash {
					crashes = append(crashes, f)
				}
			}
			if len(crashes) != tt.wantCrashes {
				t.Fatalf("%d crash findings, want %d: %+v", len(crashes), tt.wantCrashes, res.Findings)
			}
			if tt.wantCrashes == 0 {
				return
			}
			f := crashes[0]
			if f.Severity != Critical || res.Findings[0].Kind != KindCrash {
				t.Errorf("severity %s, first finding %s; want critical and the crash first", f.Severity, res.Findings[0].Kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(f.Summary, w) {
					t.Errorf("summary %q lacks %q", f.Summary, w)
				}
			}
			if f.Evidence.FirstWindow != tt.wantWindow || f.Evidence.LastWindow != tt.wantWindow {
				t.Errorf("windows %d-%d, want %d", f.Evidence.FirstWindow, f.Evidence.LastWindow, tt.wantWindow)
			}
			if got := f.Evidence.Notes["requests_served"]; got != tt.wantServed {
				t.Errorf("requests served %v, want %v", got, tt.wantServed)
			}
			for k, v := range tt.wantNotes {
				if f.Evidence.Notes[k] != v {
					t.Errorf("note %s = %v, want %v", k, f.Evidence.Notes[k], v)
				}
			}
			if len(f.Evidence.Output) > crashLines {
				t.Errorf("%d output lines kept, want at most %d", len(f.Evidence.Output), crashLines)
			}
			if tt.name == "kill -9 in window 3" && (len(f.Evidence.Output) != crashLines || f.Evidence.Output[crashLines-1] != output[79]) {
				t.Errorf("output: %d lines ending %q; want the last %d ending %q", len(f.Evidence.Output), f.Evidence.Output[len(f.Evidence.Output)-1], crashLines, output[79])
			}
		})
	}
}

// TestCrashFindingsAcrossRestarts: a target restarted twice (target.restart)
// has one crash finding per crash, each in its incarnation, each saying
// which incarnation came next and how long the target was down (from the
// crash to the next incarnation's first window); the last crash, with no
// incarnation after it, says nothing of a restart.
func TestCrashFindingsAcrossRestarts(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	a := crashRun(1, 4, t0)
	a[2].Events = []window.Event{{Kind: window.EventTargetExit, At: t0.Add(25 * time.Second), Signal: 9}}
	// The slot lost to the restart is a gap; incarnation 2 starts 52 s in.
	gap := window.Window{Incarnation: 2, Index: 4, Start: a[3].End, End: t0.Add(52 * time.Second), Gap: true}
	b := crashRun(2, 4, t0.Add(52*time.Second))
	for i := range b {
		b[i].Index += 5
	}
	b[1].Events = []window.Event{{Kind: window.EventTargetExit, Signal: 9}} // time unknown: its window's end
	c := crashRun(3, 3, b[3].End.Add(3*time.Second))
	for i := range c {
		c[i].Index += 10
	}
	c[2].Events = []window.Event{{Kind: window.EventTargetExit, ExitCode: new(2)}}
	ws := append(append(append(a, gap), b...), c...)

	var crashes []Finding
	for _, f := range Analyze(ws, Options{WarmupWindows: 1}).Findings {
		if f.Kind == KindCrash {
			crashes = append(crashes, f)
		}
	}
	if len(crashes) != 3 {
		t.Fatalf("%d crash findings, want 3", len(crashes))
	}
	want := []struct {
		inc     int
		summary string
		down    float64
	}{
		{1, "; restarted (incarnation 2), down for 27.0 s", 27},
		{2, "; restarted (incarnation 3), down for 23.0 s", 23}, // window 6 ended 72 s in; incarnation 3 began at 95 s
		{3, "", 0},
	}
	for i, w := range want {
		f := crashes[i]
		if f.Incarnation != w.inc || f.Severity != Critical {
			t.Errorf("crash %d: incarnation %d %s, want %d critical", i, f.Incarnation, f.Severity, w.inc)
		}
		if w.summary == "" {
			if strings.Contains(f.Summary, "restarted") {
				t.Errorf("crash %d: %q says restarted; nothing came after it", i, f.Summary)
			}
			continue
		}
		if !strings.HasSuffix(f.Summary, w.summary) || f.Evidence.Notes["down_seconds"] != w.down || f.Evidence.Notes["restarted_incarnation"] != float64(w.inc+1) {
			t.Errorf("crash %d: %q (notes %v), want it to end %q", i, f.Summary, f.Evidence.Notes, w.summary)
		}
	}
}

// TestCrashInAnIncarnationsFirstWindow: incarnation 2 (the target
// restarted; its first slot, 5, is the restart's gap) lost its worker in
// its first window, 6, and the resumed drive found the target stopped and
// recorded it in 6's gap. The incarnation has no other window; its crash
// is a finding all the same, and nothing else is said of it (no window to
// judge, nor to call too few).
func TestCrashInAnIncarnationsFirstWindow(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 1, 0, 0, 0, time.UTC)
	ws := crashRun(1, 5, t0)
	ws[4].Events = []window.Event{{Kind: window.EventTargetExit, At: t0.Add(45 * time.Second), Signal: 9}}
	ws = append(ws,
		window.Window{Incarnation: 2, Index: 5, Gap: true, Start: t0.Add(50 * time.Second), End: t0.Add(52 * time.Second)},
		window.Window{Incarnation: 2, Index: 6, Gap: true, Start: t0.Add(52 * time.Second), End: t0.Add(70 * time.Second),
			Events: []window.Event{{Kind: window.EventTargetExit, PID: 4242, Detail: "the target process 4242 exited (exit status unknown)",
				Output: []string{"panic: nil map", "goroutine 1 [running]:"}}}})
	res := Analyze(ws, Options{WarmupWindows: 2})
	var second []Finding
	for _, f := range res.Findings {
		if f.Incarnation == 2 {
			second = append(second, f)
		}
		// Incarnation 1's crash says when the target was up again: the
		// end of the restart's gap.
		if f.Incarnation == 1 && f.Kind == KindCrash && !strings.HasSuffix(f.Summary, "; restarted (incarnation 2), down for 7.0 s") {
			t.Errorf("incarnation 1's crash = %q, want it to say the target restarted, down 7.0 s", f.Summary)
		}
	}
	if len(second) != 1 || second[0].Kind != KindCrash || second[0].Severity != Critical {
		t.Fatalf("incarnation 2's findings = %+v, want its crash alone", second)
	}
	f := second[0]
	want := "the target stopped by 0:01:10 into the run (window 6, lost with its worker: found stopped when the drive resumed), after 0 requests served (exit status unknown)"
	if f.Summary != want || f.Evidence.FirstWindow != 6 || len(f.Evidence.Output) != 2 {
		t.Errorf("crash = %q in window %d with %d lines, want %q in window 6 with its 2 lines", f.Summary, f.Evidence.FirstWindow, len(f.Evidence.Output), want)
	}
}
