package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/store"
)

// testFleet is `longhaul dev` without its worker plus one `longhaul worker` per
// host id, all on this machine and one data directory (one store).
type testFleet struct {
	t       *testing.T
	addr    string
	data    string
	workers map[string]*proc
}

func startFleet(t *testing.T, hosts ...string) *testFleet {
	t.Helper()
	f := &testFleet{t: t, data: t.TempDir(), workers: map[string]*proc{}}
	_, f.addr = startDev(t, f.data, "--worker=false")
	for _, h := range hosts {
		f.startWorker(h)
	}
	return f
}

// startWorker starts the worker of host id h, with one measurement slot.
func (f *testFleet) startWorker(h string) {
	f.t.Helper()
	w := startProc(f.t, "worker", "--temporal", f.addr, "--data", f.data, "--host-id", h, "--slots", "1")
	w.waitFor("worker on", time.Minute)
	f.workers[h] = w
}

// runHost is the host id recorded in the run's environment.
func runHost(t *testing.T, r store.Run) string {
	t.Helper()
	var env struct {
		Host string `json:"host"`
	}
	if err := json.Unmarshal(r.Environment, &env); err != nil {
		t.Fatalf("run %s: environment %s: %v", r.ID, r.Environment, err)
	}
	return env.Host
}

// TestFleetSlots: two worker hosts with one measurement slot each, four
// soaks submitted at once. All complete; the stored runs show both hosts
// used and, on each host, one soak's drive (started_at … ended_at) never
// overlapping another's; the two that had to wait said they were queued.
func TestFleetSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: four soaks on two worker hosts (~30 s)")
	}
	f := startFleet(t, "host-a", "host-b")
	scenario := localScenario(t, 4)
	var runs []*soakRun
	for range 4 {
		runs = append(runs, startSoakRun(t, scenario, "--temporal", f.addr, "--data", f.data, "--format", "json"))
	}
	queued := 0
	for i, r := range runs {
		if code := r.wait(t); code != exitOK {
			t.Fatalf("soak %d: exit %d, want 0; stderr:\n%s", i+1, code, r.stderr.String())
		}
		if strings.Contains(r.stderr.String(), "longhaul: queued: waiting for a free measurement slot") {
			queued++
		}
	}
	st := storeOf(t, f.data)
	all, err := st.ListRuns(context.Background(), store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 {
		t.Fatalf("%d runs stored, want 4", len(all))
	}
	byHost := map[string][]store.Run{}
	for _, r := range all {
		if r.Status != store.Completed {
			t.Errorf("run %s: %s (%s), want completed", r.ID, r.Status, r.Reason)
		}
		ws, _ := st.Windows(context.Background(), r.ID, store.AllWindows)
		checkWindows(t, ws, 4)
		h := runHost(t, r)
		byHost[h] = append(byHost[h], r)
	}
	if len(byHost["host-a"]) == 0 || len(byHost["host-b"]) == 0 || len(byHost) != 2 {
		t.Errorf("runs by host: a %d, b %d, in all %d hosts; want both hosts used, no other", len(byHost["host-a"]), len(byHost["host-b"]), len(byHost))
	}
	for h, rs := range byHost {
		slices.SortFunc(rs, func(x, y store.Run) int { return x.StartedAt.Compare(y.StartedAt) })
		for i := 1; i < len(rs); i++ {
			if rs[i].StartedAt.Before(rs[i-1].EndedAt) {
				t.Errorf("host %s: run %s started at %s, before run %s ended at %s: two drives at once",
					h, rs[i].ID, rs[i].StartedAt.Format(time.StampMilli), rs[i-1].ID, rs[i-1].EndedAt.Format(time.StampMilli))
			}
		}
	}
	if queued < 2 {
		t.Errorf("%d soaks said they were queued, want at least 2 (4 soaks, 2 slots)", queued)
	}
	if held, _ := st.HostSlots(context.Background(), ""); len(held) != 0 {
		t.Errorf("slots still held after every soak ended: %+v", held)
	}
}

// TestFleetWorkerKill: kill -9 of the worker driving a soak.
//   - "returns": a worker with the same host id starts again; the run
//     resumes there (one incarnation, a gap for the window in progress) and
//     the other host never takes it.
//   - "gone": none returns within --host-wait; the run is provisioned again
//     on the other host as incarnation 2 and completes there, every window
//     slot stored once. When the dead host's worker starts again, its sweep
//     removes the target the first incarnation left there.
func TestFleetWorkerKill(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end: worker kills in a fleet of two hosts (~90 s)")
	}
	for _, tt := range []struct {
		name    string
		returns bool
	}{{"returns", true}, {"gone", false}} {
		t.Run(tt.name, func(t *testing.T) {
			f := startFleet(t, "host-a", "host-b")
			s := startLiveSoak(t, f.data, 16, 3, "--temporal", f.addr, "--host-wait", "5s")
			r, st, run, pid := s.r, s.st, s.run, s.pid
			first := runHost(t, run)
			other := map[string]string{"host-a": "host-b", "host-b": "host-a"}[first]
			f.workers[first].kill9()
			if tt.returns {
				f.startWorker(first)
			}
			run, ws := r.completed(t, st, run.ID)
			if gaps := checkWindows(t, ws, 16); gaps < 1 {
				t.Errorf("no gap for the window in progress at the kill")
			}
			want, wantInc := first, 1
			if !tt.returns {
				want, wantInc = other, 2
			}
			if h := runHost(t, run); h != want || run.Incarnations != wantInc {
				t.Errorf("run ended on %s with %d incarnations, want %s with %d", h, run.Incarnations, want, wantInc)
			}
			if !tt.returns {
				f.startWorker(first) // its sweep removes what incarnation 1 left
			}
			waitGone(t, pid)
			if held, _ := st.HostSlots(context.Background(), ""); len(held) != 0 {
				t.Errorf("slots still held after the soak ended: %+v", held)
			}
		})
	}
}
