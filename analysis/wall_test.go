package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// threadRamp is TestThroughputLimitOnARamp's ramp (VUs 2…64, saturating
// at 12 VUs, latency by Little's law) with thread readings set by probe
// for each window, given the share s of the plateau the window reached
// (1 from the knee on) and its VUs c.
func threadRamp(probe func(s, c float64, p *window.Probes)) []window.Window {
	return windows(32, func(i int, w *window.Window) {
		c := float64(2 * (i + 1))
		x := math.Min(150*c, 1800) * (1 + 0.05*math.Sin(float64(i)))
		w.VUs, w.Target, w.InFlight = int(c), c, int(c)
		w.Requests, w.OK, w.RPS = int64(3*x), int64(3*x), x
		w.LatencyMs.P50 = c / x * 1000
		if probe != nil {
			probe(math.Min(150*c, 1800)/1800, c, &w.Probes)
		}
	})
}

func f64(v float64) *float64 { return &v }

func TestThroughputLimitNamesTheWall(t *testing.T) {
	secs := windows(1, nil)[0].Duration().Seconds()
	tests := []struct {
		name      string
		probe     func(s, c float64, p *window.Probes)
		cause     string
		contains  []string
		missing   []string
		thread    string
		driverBad bool
	}{
		{"no thread readings: nothing new", nil, "",
			[]string{"saturated resource"}, []string{"thread", "CPU was saturated", "NOT VALID"}, "", false},
		{"single-threaded wall (Node.js main thread)", func(s, c float64, p *window.Probes) {
			p.HottestThread, p.HottestThreadMain = "node", true
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.98*s), f64(0.99*s)
			p.TargetBusyCores, p.CoresAllowed = f64(1.1*s), f64(2)
			p.DriverCores, p.DriverBusyCores = f64(0.3), f64(0.32)
		}, CauseSingleThread,
			[]string{"the target's main thread (node) ran at 0.98 of a core from 12 VUs on: a single-threaded wall — more VUs only queue"},
			[]string{"NOT VALID"}, "node", false},
		{"single thread on a loaded machine: busy, not on a CPU", func(s, c float64, p *window.Probes) {
			p.HottestThread, p.HottestThreadMain = "node", true
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.55*s), f64(0.97*s)
			p.TargetBusyCores, p.CoresAllowed = f64(1.05*s), f64(2)
		}, CauseSingleThread,
			[]string{"main thread (node) was busy 0.97 of the time (it ran at 0.55 of a core and waited for a CPU the rest)", "single-threaded wall"},
			nil, "node", false},
		{"all allowed cores busy", func(s, c float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.5*s), f64(0.55*s)
			p.TargetBusyCores, p.CoresAllowed = f64(3.9*s), f64(4)
		}, CauseTargetCores,
			[]string{"the target kept all 4.00 of its allowed cores busy from 12 VUs on (3.90 cores): it is CPU-bound"},
			[]string{"single-threaded"}, "demo-target", false},
		{"the CPU from the process probe when there is no busy figure", func(s, c float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores = f64(0.6 * s)
			p.CPUSeconds, p.CoresAllowed = f64(1.96*s*secs), f64(2)
		}, CauseTargetCores,
			[]string{"all 2.00 of its allowed cores busy", "(1.96 cores)"}, nil, "demo-target", false},
		{"the database busy", func(s, c float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.2*s), f64(0.25*s)
			p.TargetBusyCores, p.CoresAllowed = f64(0.4*s), f64(2)
			p.DatabaseCores, p.DatabaseBusyCores = f64(0.95*s), f64(1.0*s)
		}, CauseDatabaseCPU,
			[]string{"the database's processes were busy 1.00 cores from 12 VUs on, more than the target's 0.40"}, nil, "demo-target", false},
		{"no CPU saturated: a pool or a lock", func(s, c float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.1), f64(0.12)
			p.TargetBusyCores, p.CoresAllowed = f64(0.3), f64(2)
			p.DatabaseCores, p.DatabaseBusyCores = f64(0.05), f64(0.06)
			p.DriverCores, p.DriverBusyCores = f64(0.1), f64(0.11)
		}, CauseNoCPU,
			[]string{"no CPU was saturated from 12 VUs on", "look for a pool or a lock", "the target 0.30 of 2.00 cores", "the database 0.06"},
			[]string{"NOT VALID"}, "demo-target", false},
		// By Little's law the requests in flight are the VUs, c: a driver
		// with 0.4·c threads waiting for a CPU adds 40 % to every latency.
		{"the driver short of CPU: said loudly, the wall still named", func(s, c float64, p *window.Probes) {
			p.HottestThread, p.HottestThreadMain = "node", true
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.7*s), f64(0.98*s)
			p.TargetBusyCores, p.CoresAllowed = f64(1.0*s), f64(2)
			p.DriverCores, p.DriverBusyCores = f64(0.4), f64(0.4+0.4*c)
			p.HostForeignCPU = f64(0.3)
		}, CauseSingleThread,
			[]string{"MEASUREMENT NOT VALID: longhaul's own driver was short of CPU from ", "40 % of the p50 latency per request", "other work took 30 % of the machine", "single-threaded wall"},
			nil, "node", true},
		{"the driver short of CPU and nothing else: no pool hint", func(s, c float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.2), f64(0.3)
			p.TargetBusyCores, p.CoresAllowed = f64(0.5), f64(2)
			p.DriverCores, p.DriverBusyCores = f64(0.5), f64(0.5+0.5*c)
		}, "",
			[]string{"MEASUREMENT NOT VALID", "give them fewer cores"}, []string{"pool or a lock"}, "demo-target", true},
		{"the driver using every core itself", func(s, c float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.05), f64(0.06)
			p.TargetBusyCores, p.CoresAllowed = f64(0.1), f64(2)
			p.DriverCores, p.DriverBusyCores = f64(1.9*s), f64(1.9*s)
		}, "",
			[]string{"MEASUREMENT NOT VALID: longhaul's own driver used 1.90 of the 2.00 cores itself", "lower the load"}, []string{"pool or a lock"}, "demo-target", true},
		{"a driver waiting a little: valid", func(s, c float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.1), f64(0.12)
			p.TargetBusyCores, p.CoresAllowed = f64(0.3), f64(2)
			p.DriverCores, p.DriverBusyCores = f64(0.1), f64(0.1+0.05*c)
		}, CauseNoCPU, []string{"no CPU was saturated"}, []string{"NOT VALID"}, "demo-target", false},
		{"busy only from wake-ups on a saturated machine: not a wall", func(s, c float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.02), f64(0.95)
			p.TargetBusyCores, p.CoresAllowed = f64(1.2), f64(2)
			p.DatabaseCores, p.DatabaseBusyCores = f64(0.05), f64(1.3)
			p.HostForeignCPU = f64(0.9)
		}, CauseNoCPU, []string{"no CPU was saturated", "other work took 90 % of the machine meanwhile"}, []string{"single-threaded", "database is the wall"}, "demo-target", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := Analyze(threadRamp(tt.probe), DefaultOptions())
			f, ok := find(res, KindThroughputLimit)
			if !ok {
				t.Fatalf("no throughput_limit finding: %v", kinds(res))
			}
			t.Log(f.Summary)
			ev := f.Evidence
			if ev.Cause != tt.cause || ev.Thread != tt.thread {
				t.Errorf("cause %q, thread %q; want %q, %q", ev.Cause, ev.Thread, tt.cause, tt.thread)
			}
			for _, s := range tt.contains {
				if !strings.Contains(f.Summary, s) {
					t.Errorf("summary lacks %q", s)
				}
			}
			for _, s := range tt.missing {
				if strings.Contains(f.Summary, s) {
					t.Errorf("summary has %q", s)
				}
			}
			if got := ev.Notes["driver_short_of_cpu"] == 1; got != tt.driverBad {
				t.Errorf("driver_short_of_cpu %v, want %v", got, tt.driverBad)
			}
			if want := map[bool]Severity{false: Info, true: Warning}[tt.driverBad]; f.Severity != want {
				t.Errorf("severity %s, want %s", f.Severity, want)
			}
			if tt.probe != nil {
				if _, ok := ev.Notes["hottest_thread_cores"]; !ok {
					t.Errorf("no hottest_thread_cores in the evidence: %v", ev.Notes)
				}
			} else if _, ok := ev.Notes["hottest_thread_cores"]; ok || ev.Thread != "" {
				t.Errorf("thread evidence without thread readings: %v", ev.Notes)
			}
		})
	}
}

// TestCollapseNamesTheWall: a collapse (the demo model's unindexed table)
// whose late windows show the database's processes busy says the database
// was the wall, beside the table; with a single thread pinned, that; with
// nothing busy while latency rose, a pool or a lock; with no thread
// readings, nothing more than before.
func TestCollapseNamesTheWall(t *testing.T) {
	base := demo.with("no index", func(m *model) { m.noIndex = true }).generate(1)
	tests := []struct {
		name     string
		probe    func(frac float64, p *window.Probes) // frac: the window's place in the run, 0…1
		cause    string
		contains []string
	}{
		{"no thread readings", nil, "", nil},
		{"the database busy late", func(frac float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.2), f64(0.25)
			p.TargetBusyCores, p.CoresAllowed = f64(0.3), f64(2)
			p.DatabaseCores, p.DatabaseBusyCores = f64(0.3+0.7*frac), f64(0.3+0.7*frac)
		}, CauseDatabaseCPU, []string{"; the database's processes were busy 0.9", " cores in the last quarter of the windows, more than the target's 0.30: the database is the wall"}},
		{"a single thread pinned late", func(frac float64, p *window.Probes) {
			p.HottestThread, p.HottestThreadMain = "node", true
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.5+0.5*frac), f64(0.5+0.5*frac)
			p.TargetBusyCores, p.CoresAllowed = f64(1.1), f64(2)
		}, CauseSingleThread, []string{"the target's main thread (node) ran at 0.9", "of a core in the last quarter of the windows: a single-threaded wall"}},
		{"nothing saturated while latency rose", func(frac float64, p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.1), f64(0.12)
			p.TargetBusyCores, p.CoresAllowed = f64(0.3), f64(2)
		}, CauseNoCPU, []string{"no CPU was saturated in the last quarter of the windows (the target's busiest thread demo-target busy 0.12 of the time and the target 0.30 of 2.00 cores) — look for a pool or a lock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := slices.Clone(base)
			for i := range ws {
				ws[i].Probes = base[i].Probes
				if tt.probe != nil {
					tt.probe(float64(i)/float64(len(ws)-1), &ws[i].Probes)
				}
			}
			f, ok := find(Analyze(ws, DefaultOptions()), KindCollapse)
			if !ok || f.Severity != Critical || f.Evidence.Table != "items" {
				t.Fatalf("want the critical collapse on items, got %+v", f)
			}
			if f.Evidence.Cause != tt.cause {
				t.Errorf("cause %q, want %q: %s", f.Evidence.Cause, tt.cause, f.Summary)
			}
			for _, s := range tt.contains {
				if !strings.Contains(f.Summary, s) {
					t.Errorf("summary lacks %q: %s", s, f.Summary)
				}
			}
			if tt.cause == "" {
				for _, s := range []string{"wall", "saturated", "busy"} {
					if strings.Contains(f.Summary, s) {
						t.Errorf("no wall to name, but the summary says %q: %s", s, f.Summary)
					}
				}
			}
			if !strings.Contains(f.Summary, "missing an index") {
				t.Errorf("the table's explanation is gone: %s", f.Summary)
			}
		})
	}
}

// TestExplainWalls: a worse latency or throughput verdict gets the
// resource saturated in B's rounds; other verdicts, and rounds without
// thread readings or with nothing saturated, get none.
func TestExplainWalls(t *testing.T) {
	rounds := func(probe func(p *window.Probes)) [][]window.Window {
		var out [][]window.Window
		for range 3 {
			out = append(out, windows(10, func(i int, w *window.Window) {
				if probe != nil {
					probe(&w.Probes)
				}
			}))
		}
		return out
	}
	verdicts := func() []Verdict {
		return []Verdict{
			{Metric: MetricP50Ms, Outcome: Worse, Summary: "p50 → worse"},
			{Metric: MetricRPS, Outcome: Worse, Summary: "rps → worse"},
			{Metric: MetricP99Ms, Outcome: Better, Summary: "p99 → better"},
			{Metric: MetricCPUMicrosPerReq, Outcome: Worse, Summary: "cpu → worse"},
		}
	}
	tests := []struct {
		name  string
		probe func(p *window.Probes)
		cause string
		wall  string
	}{
		{"no thread readings", nil, "", ""},
		{"the main thread pinned", func(p *window.Probes) {
			p.HottestThread, p.HottestThreadMain = "node", true
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.97), f64(0.99)
			p.TargetBusyCores, p.CoresAllowed = f64(1.1), f64(2)
		}, CauseSingleThread, "the target's main thread (node) ran at 0.97 of a core in B's rounds: a single-threaded wall"},
		{"all cores", func(p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.6), f64(0.7)
			p.TargetBusyCores, p.CoresAllowed = f64(1.95), f64(2)
		}, CauseTargetCores, "the target kept all 2.00 of its allowed cores busy in B's rounds (1.95 cores): it is CPU-bound; its busiest thread, demo-target, was busy 0.70"},
		{"nothing saturated: no guess", func(p *window.Probes) {
			p.HottestThread = "demo-target"
			p.HottestThreadCores, p.HottestThreadBusy = f64(0.1), f64(0.12)
			p.TargetBusyCores, p.CoresAllowed = f64(0.3), f64(2)
			p.DatabaseCores, p.DatabaseBusyCores = f64(0.05), f64(0.06)
		}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := verdicts()
			ExplainWalls(vs, rounds(tt.probe), 3*time.Second)
			for i, v := range vs {
				named := i < 2 && tt.cause != "" // the worse latency and throughput verdicts
				if !named {
					if v.Wall != "" || v.WallCause != "" || strings.Contains(v.Summary, " — ") {
						t.Errorf("%s: a wall named: %+v", v.Metric, v)
					}
					continue
				}
				if v.WallCause != tt.cause || !strings.HasPrefix(v.Wall, tt.wall) || !strings.HasSuffix(v.Summary, "→ worse — "+v.Wall) {
					t.Errorf("%s: cause %q, wall %q, summary %q; want %q, %q…", v.Metric, v.WallCause, v.Wall, v.Summary, tt.cause, tt.wall)
				}
			}
		})
	}
}
