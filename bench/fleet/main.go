// Command fleet measures how far one `longhaul server` on PostgreSQL with two
// workers goes (issue 15, "How far"); bench/fleet/run.sh builds and runs it.
//
//	fleet -mode batch -soaks 50 -slots 1   // 50 soaks at once, then the checks and the CPU figures
//	fleet -mode idle -idle 10              // single soaks on an idle stack: submit → first window
//
// Each mode starts its own stack in -work: a PostgreSQL cluster (initdb,
// default settings: fsync on, max_connections 100) holding Temporal's
// databases and the results database, `longhaul server --persistence
// postgres://…`, and two `longhaul worker --host-id fleet-a|fleet-b
// --slots N` on it; the soaks run the local provider on a prebuilt target.
//
// CPU seconds come from /proc/PID/stat (utime+stime, clock ticks of 10 ms):
// of the server process, and of the PostgreSQL cluster (the postmaster's
// own and its reaped children's, plus the live backends'), taken just before
// the first submit and after the last soak ended. Backends are also sampled
// every 500 ms to split the cluster's CPU by database.
package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
	"github.com/longhaul-dev/longhaul/store"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "fleet:", err)
		os.Exit(1)
	}
}

type config struct {
	longhaul, target, work, pgBin, mode string
	soaks, windows, slots, idle, rate   int
	timeout                             time.Duration
}

func run() error {
	var c config
	flag.StringVar(&c.longhaul, "longhaul", "", "the longhaul binary")
	flag.StringVar(&c.target, "target", "", "the target binary (cmd/longhaul/testdata/soaktarget)")
	flag.StringVar(&c.work, "work", "/tmp/longhaul-fleet", "work directory (emptied first)")
	flag.StringVar(&c.pgBin, "pg-bin", "", "PostgreSQL binaries (default: as internal/pgtest finds them)")
	flag.StringVar(&c.mode, "mode", "batch", "batch (soaks at once) or idle (single soaks one after another)")
	flag.IntVar(&c.soaks, "soaks", 50, "soaks submitted at once (batch)")
	flag.IntVar(&c.windows, "windows", 4, "windows of 1 s per soak")
	flag.IntVar(&c.slots, "slots", 1, "measurement slots per worker host")
	flag.IntVar(&c.idle, "idle", 10, "single soaks (idle)")
	flag.IntVar(&c.rate, "rate", 100, "requests per second of each soak (open model, at most 4 VUs)")
	flag.DurationVar(&c.timeout, "timeout", 15*time.Minute, "bound on waiting for the soaks")
	flag.Parse()
	if c.longhaul == "" || c.target == "" {
		return errors.New("-longhaul and -target are required")
	}
	_ = os.RemoveAll(c.work)
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		return err
	}
	s, err := startStack(c)
	defer s.stop()
	if err != nil {
		return err
	}
	fmt.Printf("# %s %s, %d cores, load %s\n", time.Now().UTC().Format("2006-01-02T15:04Z"), hostname(), numCPU(), loadavg())
	fmt.Printf("# stack: longhaul server on PostgreSQL %s (defaults: fsync on, max_connections 100; Temporal and results databases in one cluster), workers fleet-a and fleet-b with --slots %d, local provider, soaks of %d × 1 s windows at %d requests/s\n", s.pgVersion(), c.slots, c.windows, c.rate)
	if c.mode == "idle" {
		return s.idle(c)
	}
	return s.batch(c)
}

// --- the stack

type stack struct {
	c        config
	pg       *pgtest.Cluster
	server   *exec.Cmd
	workers  []*exec.Cmd
	addr     string // Temporal frontend
	storeURL string
	st       store.Store
	tc       client.Client
	scenario string
}

func startStack(c config) (*stack, error) {
	s := &stack{c: c}
	if err := s.startPostgres(); err != nil {
		return s, err
	}
	s.storeURL = s.dsn("longhaul")
	if err := s.pg.Exec("postgres", "CREATE DATABASE longhaul"); err != nil {
		return s, err
	}
	port, err := freeport.Loopback()
	if err != nil {
		return s, err
	}
	s.addr = fmt.Sprintf("127.0.0.1:%d", port)
	s.server, err = startLonghaul(c, "server", "temporal server at", 3*time.Minute,
		"server", "--persistence", s.dsn("temporal"), "--addr", s.addr, "--data", filepath.Join(c.work, "server"))
	if err != nil {
		return s, err
	}
	for _, h := range []string{"fleet-a", "fleet-b"} {
		w, err := startLonghaul(c, "worker-"+h, "worker on", time.Minute,
			"worker", "--temporal", s.addr, "--store", s.storeURL, "--data", filepath.Join(c.work, h),
			"--host-id", h, "--slots", strconv.Itoa(c.slots))
		if w != nil {
			s.workers = append(s.workers, w)
		}
		if err != nil {
			return s, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if s.st, err = store.Open(ctx, s.storeURL); err != nil {
		return s, err
	}
	if s.tc, err = client.Dial(client.Options{HostPort: s.addr, Namespace: "default",
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}); err != nil {
		return s, fmt.Errorf("dial temporal: %w", err)
	}
	s.scenario = filepath.Join(c.work, "fleet.yaml")
	yaml := fmt.Sprintf(`name: fleet
load: {rate: %d, max_vus: 4, duration: %ds, window: 1s, timeout: 2s}
environment:
  provider: local
  target:
    command: [%q]
    health: /health
    health_timeout: 30s
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`, c.rate, c.windows, c.target)
	return s, os.WriteFile(s.scenario, []byte(yaml), 0o644)
}

func (s *stack) stop() {
	if s.tc != nil {
		s.tc.Close()
	}
	if s.st != nil {
		s.st.Close()
	}
	for _, w := range s.workers {
		stopProc(w)
	}
	stopProc(s.server)
	if s.pg != nil {
		s.pg.Stop()
	}
}

func (s *stack) dsn(db string) string { return s.pg.DSN(db) }

// pgVersion is the server's version, for the header ("?" if it cannot say).
func (s *stack) pgVersion() string {
	db, err := sql.Open("pgx", s.dsn("postgres"))
	if err != nil {
		return "?"
	}
	defer db.Close()
	var v string
	if err := db.QueryRow("SHOW server_version").Scan(&v); err != nil {
		return "?"
	}
	return v
}

// startLonghaul starts `longhaul args…`, its output in WORK/name.log, and
// waits for a line containing ready.
func startLonghaul(c config, name, ready string, within time.Duration, args ...string) (*exec.Cmd, error) {
	logPath := filepath.Join(c.work, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.longhaul, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	f.Close()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(logPath)
		if strings.Contains(string(b), ready) {
			return cmd, nil
		}
		if cmd.ProcessState != nil || syscall.Kill(cmd.Process.Pid, 0) != nil {
			break
		}
	}
	b, _ := os.ReadFile(logPath)
	return cmd, fmt.Errorf("%s not ready within %s:\n%s", name, within, b)
}

func stopProc(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
}

func (s *stack) startPostgres() error {
	// Durable: the store's and Temporal's commits cost what they would on a
	// real server.
	var err error
	s.pg, err = pgtest.StartCluster(pgtest.ClusterOptions{Durable: true, Dir: filepath.Join(s.c.work, "pg"), Bin: s.c.pgBin})
	return err
}

// --- submitting and waiting

type submitted struct {
	id       string
	execAt   time.Time // before `longhaul run` was started
	returned time.Time
	err      error
}

// submit runs `longhaul run --detach` and returns the run id.
func (s *stack) submit() submitted {
	sub := submitted{execAt: time.Now()}
	cmd := exec.Command(s.c.longhaul, "run", s.scenario, "--temporal", s.addr, "--store", s.storeURL,
		"--data", filepath.Join(s.c.work, "client"), "--detach", "--format", "json")
	out, err := cmd.CombinedOutput()
	sub.returned = time.Now()
	if err != nil {
		sub.err = fmt.Errorf("longhaul run: %v\n%s", err, out)
		return sub
	}
	for _, f := range strings.Fields(string(out)) {
		if len(f) == 36 && strings.Count(f, "-") == 4 {
			sub.id = f
			break
		}
	}
	if sub.id == "" {
		sub.err = fmt.Errorf("longhaul run: no run id in %q", out)
	}
	return sub
}

// waitAll waits until every run in ids has a final status.
func (s *stack) waitAll(ids []string, within time.Duration, onTick func()) (map[string]store.Run, error) {
	ctx := context.Background()
	deadline := time.Now().Add(within)
	for {
		runs := map[string]store.Run{}
		done := 0
		for _, id := range ids {
			r, err := s.st.GetRun(ctx, id)
			if err != nil {
				return nil, err
			}
			runs[id] = r
			if r.Status.Done() {
				done++
			}
		}
		if done == len(ids) {
			return runs, nil
		}
		if time.Now().After(deadline) {
			var stuck []string
			for id, r := range runs {
				if !r.Status.Done() {
					stuck = append(stuck, fmt.Sprintf("%s %s (%s)", id, r.Status, r.Reason))
				}
			}
			sort.Strings(stuck)
			return runs, fmt.Errorf("%d of %d runs not done within %s: %s", len(stuck), len(ids), within, strings.Join(stuck, "; "))
		}
		if onTick != nil {
			onTick()
		}
		time.Sleep(time.Second)
	}
}

// --- the batch

func (s *stack) batch(c config) error {
	ctx := context.Background()
	pgMax := &pgConnections{dsn: s.dsn("postgres")}
	sampler := newPGSampler(s.pg.PID())
	sampler.sample()
	cpu0 := s.cpu()
	start := time.Now()
	subs := make([]submitted, c.soaks)
	var wg sync.WaitGroup
	for i := range subs {
		wg.Go(func() { subs[i] = s.submit() })
	}
	// Sample while submitting too: the submits are when connections peak.
	stopSampling := make(chan struct{})
	var swg sync.WaitGroup
	swg.Go(func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopSampling:
				return
			case <-t.C:
				sampler.sample()
				pgMax.sample()
			}
		}
	})
	wg.Wait()
	submittedIn := time.Since(start)
	var ids []string
	failedSubmits := 0
	for _, sub := range subs {
		if sub.err != nil {
			failedSubmits++
			fmt.Fprintln(os.Stderr, sub.err)
			continue
		}
		ids = append(ids, sub.id)
	}
	runs, waitErr := s.waitAll(ids, c.timeout, nil)
	elapsed := time.Since(start)
	sampler.sample()
	cpu1 := s.cpu()
	close(stopSampling)
	swg.Wait()

	problems := 0
	report := func(format string, args ...any) {
		problems++
		fmt.Printf("PROBLEM: "+format+"\n", args...)
	}
	if failedSubmits > 0 {
		report("%d of %d submits failed", failedSubmits, c.soaks)
	}
	if waitErr != nil {
		report("%v", waitErr)
	}
	fmt.Printf("submitted %d soaks in %.1f s (%d failed); all ended %.1f s after the first submit\n", len(ids), submittedIn.Seconds(), failedSubmits, elapsed.Seconds())

	statuses := map[store.Status]int{}
	windows, gaps := 0, 0
	byHost := map[string][]store.Run{}
	for _, id := range ids {
		r := runs[id]
		statuses[r.Status]++
		if r.Status != store.Completed {
			report("run %s: %s (%s)", id, r.Status, r.Reason)
		}
		ws, err := s.st.Windows(ctx, id, store.AllWindows)
		if err != nil {
			return err
		}
		seen := map[int]int{}
		for _, w := range ws {
			seen[w.Index]++
			if w.Gap {
				gaps++
			} else {
				windows++
			}
		}
		for i := range c.windows {
			if seen[i] != 1 {
				report("run %s: window slot %d stored %d times, want once", id, i, seen[i])
			}
		}
		if len(ws) != c.windows {
			report("run %s: %d window rows, want %d", id, len(ws), c.windows)
		}
		if r.Incarnations != 1 {
			report("run %s: %d incarnations, want 1", id, r.Incarnations)
		}
		h := runHost(r)
		byHost[h] = append(byHost[h], r)
	}
	fmt.Printf("statuses: %v; windows committed %d (of %d × %d), gaps %d\n", statuses, windows, len(ids), c.windows, gaps)
	hosts := slices.Sorted(maps.Keys(byHost))
	for _, h := range hosts {
		rs := byHost[h]
		peak := maxOverlap(rs)
		fmt.Printf("host %s: %d soaks, at most %d driven at once (slots %d)\n", h, len(rs), peak, c.slots)
		if peak > c.slots {
			report("host %s: %d drives at once, more than its %d slots", h, peak, c.slots)
		}
	}
	if len(hosts) != 2 {
		report("runs on hosts %v, want fleet-a and fleet-b", hosts)
	}
	if held, err := s.st.HostSlots(ctx, ""); err != nil || len(held) != 0 {
		report("slots still held after every soak ended: %+v (%v)", held, err)
	}

	d := cpu1.minus(cpu0)
	perWin := func(sec float64) string {
		if windows == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f ms", 1000*sec/float64(windows))
	}
	perSoak := func(sec float64) string { return fmt.Sprintf("%.2f s", sec/float64(max(len(ids), 1))) }
	fmt.Printf("CPU over the batch (%.1f s wall), per committed window (%d) and per soak (%d):\n", elapsed.Seconds(), windows, len(ids))
	fmt.Printf("  longhaul server (Temporal)    %7.2f s  %9s/window  %s/soak\n", d.server, perWin(d.server), perSoak(d.server))
	fmt.Printf("  PostgreSQL (whole cluster)    %7.2f s  %9s/window  %s/soak\n", d.pg, perWin(d.pg), perSoak(d.pg))
	fmt.Printf("  server + PostgreSQL           %7.2f s  %9s/window  %s/soak\n", d.server+d.pg, perWin(d.server+d.pg), perSoak(d.server+d.pg))
	byDB := sampler.byDatabase()
	for _, k := range slices.Sorted(maps.Keys(byDB)) {
		fmt.Printf("    PostgreSQL backends of %-22s %6.2f s\n", k, byDB[k])
	}
	fmt.Printf("  workers (own, both)           %7.2f s  %9s/window  %s/soak\n", d.workers, perWin(d.workers), perSoak(d.workers))
	fmt.Printf("  targets (reaped by workers)   %7.2f s\n", d.workerChildren)
	fmt.Printf("peak PostgreSQL connections: %d (max_connections %d)\n", pgMax.peak, pgMax.limit)

	ph, err := s.phases(ids, runs)
	if err != nil {
		return err
	}
	fmt.Println("per soak, seconds from submit (the run's created_at):")
	printPhases(ph)
	if problems > 0 {
		return fmt.Errorf("%d problems", problems)
	}
	fmt.Println("OK: every soak completed, every window slot stored once, no host over its slots, no slot left held")
	return nil
}

// maxOverlap is the most runs whose [StartedAt, EndedAt] overlap at once.
func maxOverlap(rs []store.Run) int {
	type ev struct {
		t time.Time
		d int
	}
	var evs []ev
	for _, r := range rs {
		evs = append(evs, ev{r.StartedAt, 1}, ev{r.EndedAt, -1})
	}
	sort.Slice(evs, func(i, j int) bool {
		if evs[i].t.Equal(evs[j].t) {
			return evs[i].d < evs[j].d // an end before a start at the same instant
		}
		return evs[i].t.Before(evs[j].t)
	})
	n, peak := 0, 0
	for _, e := range evs {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

func runHost(r store.Run) string {
	var env struct {
		Host string `json:"host"`
	}
	_ = json.Unmarshal(r.Environment, &env)
	return env.Host
}

// --- the idle series

func (s *stack) idle(c config) error {
	var ids []string
	execAt := map[string]time.Time{}
	for i := range c.idle {
		time.Sleep(3 * time.Second) // let the previous soak's teardown and analysis settle
		sub := s.submit()
		if sub.err != nil {
			return sub.err
		}
		if _, err := s.waitAll([]string{sub.id}, 2*time.Minute, nil); err != nil {
			return fmt.Errorf("idle soak %d: %w", i+1, err)
		}
		ids = append(ids, sub.id)
		execAt[sub.id] = sub.execAt
	}
	runs, err := s.waitAll(ids, time.Minute, nil)
	if err != nil {
		return err
	}
	ph, err := s.phases(ids, runs)
	if err != nil {
		return err
	}
	for i := range ph {
		ph[i].cli = runs[ids[i]].CreatedAt.Sub(execAt[ids[i]])
	}
	fmt.Printf("%d single soaks, each submitted when nothing else ran; seconds from the run's created_at (the CLI's own start before it: 'cli'):\n", len(ids))
	printPhases(ph)
	return nil
}

// --- phases from the workflow histories

// phase is one soak's times, each from the run's created_at (set by
// `longhaul run` just before it starts the workflow).
type phase struct {
	cli         time.Duration // `longhaul run` exec → created_at (idle only)
	started     time.Duration // workflow started (history)
	claimed     time.Duration // ClaimSlot completed: the slot is held
	provision   time.Duration // Provision started on the host's queue
	envUp       time.Duration // Provision completed
	firstWindow time.Duration // the first window closed (its end)
	claims      int           // ClaimSlot attempts
}

func (s *stack) phases(ids []string, runs map[string]store.Run) ([]phase, error) {
	ctx := context.Background()
	var out []phase
	for _, id := range ids {
		r := runs[id]
		p := phase{}
		sched := map[int64]string{}
		it := s.tc.GetWorkflowHistory(ctx, r.WorkflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			e, err := it.Next()
			if err != nil {
				return nil, fmt.Errorf("history of %s: %w", r.WorkflowID, err)
			}
			at := e.GetEventTime().AsTime().Sub(r.CreatedAt)
			switch e.GetEventType() {
			case enumspb.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED:
				p.started = at
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
				sched[e.GetEventId()] = e.GetActivityTaskScheduledEventAttributes().GetActivityType().GetName()
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_STARTED:
				a := e.GetActivityTaskStartedEventAttributes()
				switch sched[a.GetScheduledEventId()] {
				case "Provision":
					if p.provision == 0 {
						p.provision = at
					}
				case "ClaimSlot":
					p.claims = int(a.GetAttempt())
				}
			case enumspb.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
				switch sched[e.GetActivityTaskCompletedEventAttributes().GetScheduledEventId()] {
				case "ClaimSlot":
					if p.claimed == 0 {
						p.claimed = at
					}
				case "Provision":
					if p.envUp == 0 {
						p.envUp = at
					}
				}
			}
		}
		ws, err := s.st.Windows(ctx, id, store.AllWindows)
		if err != nil {
			return nil, err
		}
		for _, w := range ws {
			if !w.Gap {
				p.firstWindow = w.End.Sub(r.CreatedAt)
				break
			}
		}
		out = append(out, p)
	}
	return out, nil
}

func printPhases(ph []phase) {
	cols := []struct {
		name string
		get  func(phase) time.Duration
	}{
		{"workflow started", func(p phase) time.Duration { return p.started }},
		{"slot claimed", func(p phase) time.Duration { return p.claimed }},
		{"provision started", func(p phase) time.Duration { return p.provision }},
		{"environment up", func(p phase) time.Duration { return p.envUp }},
		{"first window closed", func(p phase) time.Duration { return p.firstWindow }},
	}
	if ph[0].cli != 0 {
		fmt.Printf("  %-22s median %6.2f  max %6.2f\n", "cli start (before)", median(ph, func(p phase) time.Duration { return p.cli }), maxOf(ph, func(p phase) time.Duration { return p.cli }))
	}
	for _, c := range cols {
		fmt.Printf("  %-22s median %6.2f  max %6.2f\n", c.name, median(ph, c.get), maxOf(ph, c.get))
	}
	claims := 0
	for _, p := range ph {
		claims = max(claims, p.claims)
	}
	fmt.Printf("  most ClaimSlot attempts of one soak: %d\n", claims)
	fmt.Print("  each (s): ")
	for _, p := range ph {
		fmt.Printf("%.2f ", p.firstWindow.Seconds())
	}
	fmt.Println()
}

func median(ph []phase, get func(phase) time.Duration) float64 {
	v := make([]float64, len(ph))
	for i, p := range ph {
		v[i] = get(p).Seconds()
	}
	sort.Float64s(v)
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

func maxOf(ph []phase, get func(phase) time.Duration) float64 {
	m := 0.0
	for _, p := range ph {
		m = max(m, get(p).Seconds())
	}
	return m
}

// --- CPU accounting

const clkTck = 100 // Linux USER_HZ

// procTimes reads utime, stime, cutime, cstime (seconds) of pid.
func procTimes(pid int) (self, children float64, ppid int, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// f[0] is field 3 (state): utime is field 14 → f[11].
	num := func(i int) float64 { v, _ := strconv.ParseFloat(f[i], 64); return v / clkTck }
	ppid, _ = strconv.Atoi(f[1])
	return num(11) + num(12), num(13) + num(14), ppid, true
}

type cpuSnapshot struct {
	server, pg, workers, workerChildren float64
}

func (a cpuSnapshot) minus(b cpuSnapshot) cpuSnapshot {
	return cpuSnapshot{a.server - b.server, a.pg - b.pg, a.workers - b.workers, a.workerChildren - b.workerChildren}
}

func (s *stack) cpu() cpuSnapshot {
	var c cpuSnapshot
	c.server, _, _, _ = procTimes(s.server.Process.Pid)
	for _, w := range s.workers {
		self, ch, _, _ := procTimes(w.Process.Pid)
		c.workers += self
		c.workerChildren += ch
	}
	pm := s.pg.PID()
	self, ch, _, _ := procTimes(pm)
	c.pg = self + ch
	for _, pid := range childrenOf(pm) {
		if own, _, _, ok := procTimes(pid); ok {
			c.pg += own
		}
	}
	return c
}

func childrenOf(parent int) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, _, pp, ok := procTimes(pid); ok && pp == parent {
			out = append(out, pid)
		}
	}
	return out
}

// pgSampler attributes the CPU of the cluster's processes to databases by
// their titles ("postgres: USER DB 127.0.0.1(PORT) STATE"); background
// processes count as "(background)". A backend's CPU after its last sample
// is not attributed.
type pgSampler struct {
	postmaster int
	mu         sync.Mutex
	first      map[int]float64
	last       map[int]float64
	db         map[int]string
	started    bool
}

func newPGSampler(pm int) *pgSampler {
	return &pgSampler{postmaster: pm, first: map[int]float64{}, last: map[int]float64{}, db: map[int]string{}}
}

func (p *pgSampler) sample() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pid := range childrenOf(p.postmaster) {
		own, _, _, ok := procTimes(pid)
		if !ok {
			continue
		}
		if _, seen := p.first[pid]; !seen {
			if p.started {
				p.first[pid] = 0 // born during the batch
			} else {
				p.first[pid] = own
			}
			p.db[pid] = pgDatabase(pid)
		}
		p.last[pid] = own
	}
	p.started = true
}

func (p *pgSampler) byDatabase() map[string]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]float64{}
	for pid, l := range p.last {
		out[p.db[pid]] += l - p.first[pid]
	}
	return out
}

func pgDatabase(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	title := strings.TrimRight(strings.ReplaceAll(string(b), "\x00", " "), " ")
	f := strings.Fields(strings.TrimPrefix(title, "postgres: "))
	if len(f) >= 3 && strings.Contains(f[2], "(") {
		return f[1]
	}
	return "(background)"
}

// pgConnections keeps the peak of pg_stat_activity's client backends.
type pgConnections struct {
	dsn         string
	db          *sql.DB
	peak, limit int
}

func (p *pgConnections) sample() {
	if p.db == nil {
		db, err := sql.Open("pgx", p.dsn)
		if err != nil {
			return
		}
		db.SetMaxOpenConns(1)
		p.db = db
		var s string
		if p.db.QueryRow("SHOW max_connections").Scan(&s) == nil {
			p.limit, _ = strconv.Atoi(s)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var n int
	if p.db.QueryRowContext(ctx, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'").Scan(&n) == nil {
		p.peak = max(p.peak, n)
	}
}

// --- small things

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func hostname() string { h, _ := os.Hostname(); return h }

func numCPU() int {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "processor") {
			n++
		}
	}
	return n
}
