// Package activitiestest provides in-memory fakes of the activities'
// dependencies (store, provisioner, driver) for tests of activities,
// workflows and commands that must not start real processes.
package activitiestest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/analysis"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/thresholds"
	"github.com/longhaul-dev/longhaul/window"
)

// Hello is a minimal scenario: one GET /items op on a target at a fixed
// URL, which the fakes never dial. The tests of activities and workflows
// store it as their runs' scenario, and cmd/longhaul's replay_gen_test.go
// records workflows' replay histories with it.
const Hello = `name: hello
environment:
  target: {url: "http://127.0.0.1:8080"}
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
`

// Store is an in-memory store.Store. The zero value is ready to use.
type Store struct {
	mu       sync.Mutex
	runs     map[string]store.Run
	windows  map[string]map[[2]int]window.Window
	findings map[string][]analysis.Finding
	judged   map[string][]thresholds.Result
	comps    map[string]store.Comparison
	notes    map[string][]store.Notification
	// compNotes are the comparisons' notifications.
	compNotes map[string][]store.Notification
	slots     []store.Slot
	profiles  map[string][]store.Profile
	logs      map[string][]store.TargetLog
	// Statuses records every SetStatus call in order, as "status" or "status: reason".
	Statuses []string
	// Puts counts PutWindow calls per (run, incarnation, index) key, to catch rewrites.
	Puts map[string]int
}

var _ store.Store = (*Store)(nil)

func (s *Store) init() {
	if s.runs == nil {
		s.runs = map[string]store.Run{}
		s.windows = map[string]map[[2]int]window.Window{}
		s.findings = map[string][]analysis.Finding{}
		s.judged = map[string][]thresholds.Result{}
		s.comps = map[string]store.Comparison{}
		s.notes = map[string][]store.Notification{}
		s.compNotes = map[string][]store.Notification{}
		s.Puts = map[string]int{}
		s.profiles = map[string][]store.Profile{}
		s.logs = map[string][]store.TargetLog{}
	}
}

// PutLog implements store.Store.
func (s *Store) PutLog(_ context.Context, l store.TargetLog) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if _, ok := s.runs[l.RunID]; !ok {
		return fmt.Errorf("run %s: %w", l.RunID, store.ErrNotFound)
	}
	ls := slices.DeleteFunc(s.logs[l.RunID], func(m store.TargetLog) bool {
		return m.Incarnation == l.Incarnation && m.Source == l.Source
	})
	s.logs[l.RunID] = append(ls, l)
	return nil
}

// Logs implements store.Store.
func (s *Store) Logs(_ context.Context, runID string, withData bool) ([]store.TargetLog, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	out := slices.Clone(s.logs[runID])
	slices.SortFunc(out, func(a, b store.TargetLog) int {
		if a.Incarnation != b.Incarnation {
			return a.Incarnation - b.Incarnation
		}
		return strings.Compare(a.Source, b.Source)
	})
	if !withData {
		for i := range out {
			out[i].Data = nil
		}
	}
	return out, nil
}

// PutProfile implements store.Store.
func (s *Store) PutProfile(_ context.Context, p store.Profile) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if _, ok := s.runs[p.RunID]; !ok {
		return fmt.Errorf("put profile of run %s: run %w", p.RunID, store.ErrNotFound)
	}
	ps := slices.DeleteFunc(s.profiles[p.RunID], func(q store.Profile) bool {
		return q.Kind == p.Kind && q.Incarnation == p.Incarnation && q.Index == p.Index
	})
	s.profiles[p.RunID] = append(ps, p)
	return nil
}

// Profiles implements store.Store.
func (s *Store) Profiles(_ context.Context, runID string, q store.ProfileQuery) ([]store.Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	var out []store.Profile
	for _, p := range s.profiles[runID] {
		if (q.Kind != "" && p.Kind != q.Kind) || p.Index < q.FromIndex || (q.ToIndex > 0 && p.Index >= q.ToIndex) {
			continue
		}
		if !q.WithData {
			p.Data = nil
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.Incarnation < b.Incarnation
	})
	return out, nil
}

// DeleteProfile implements store.Store.
func (s *Store) DeleteProfile(_ context.Context, runID string, kind store.ProfileKind, incarnation, index int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	s.profiles[runID] = slices.DeleteFunc(s.profiles[runID], func(q store.Profile) bool {
		return q.Kind == kind && q.Incarnation == incarnation && q.Index == index
	})
	return nil
}

// PutRun implements store.Store.
func (s *Store) PutRun(_ context.Context, r store.Run) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	s.runs[r.ID] = r
	return nil
}

// GetRun implements store.Store.
func (s *Store) GetRun(_ context.Context, id string) (store.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	r, ok := s.runs[id]
	if !ok {
		return store.Run{}, fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// ListRuns implements store.Store (newest first, no filters beyond Status, Name and Schedule).
func (s *Store) ListRuns(_ context.Context, opts store.ListOptions) ([]store.Run, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	var out []store.Run
	for _, r := range s.runs {
		if (opts.Status == "" || r.Status == opts.Status) && (opts.Name == "" || r.Name == opts.Name) && (opts.Schedule == "" || r.Schedule == opts.Schedule) {
			out = append(out, r)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

// SetStatus implements store.Store.
func (s *Store) SetStatus(_ context.Context, id string, st store.Status, reason string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	r, ok := s.runs[id]
	if !ok {
		return fmt.Errorf("run %s: %w", id, store.ErrNotFound)
	}
	r.Status, r.Reason = st, reason
	stampTimes(st, at, &r.StartedAt, &r.EndedAt)
	s.runs[id] = r
	if reason != "" {
		s.Statuses = append(s.Statuses, string(st)+": "+reason)
	} else {
		s.Statuses = append(s.Statuses, string(st))
	}
	return nil
}

// stampTimes moves a run's or a comparison's times on a change to status
// st at at, as the SQL store does: the first Running stamps the start, a
// final status the end.
func stampTimes(st store.Status, at time.Time, started, ended *time.Time) {
	if st == store.Running && started.IsZero() {
		*started = at
	}
	if st.Done() {
		*ended = at
	}
}

// PutWindow implements store.Store.
func (s *Store) PutWindow(_ context.Context, w window.Window) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if s.windows[w.RunID] == nil {
		s.windows[w.RunID] = map[[2]int]window.Window{}
	}
	s.windows[w.RunID][[2]int{w.Incarnation, w.Index}] = w
	s.Puts[fmt.Sprintf("%s/%d/%d", w.RunID, w.Incarnation, w.Index)]++
	return nil
}

// Windows implements store.Store.
func (s *Store) Windows(_ context.Context, runID string, q store.WindowQuery) ([]window.Window, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	var out []window.Window
	for k, w := range s.windows[runID] {
		if (q.Incarnation < 0 || k[0] == q.Incarnation) && k[1] >= q.FromIndex {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b window.Window) int {
		if a.Incarnation != b.Incarnation {
			return a.Incarnation - b.Incarnation
		}
		return a.Index - b.Index
	})
	return out, nil
}

// PutFindings implements store.Store.
func (s *Store) PutFindings(_ context.Context, runID string, fs []analysis.Finding) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	s.findings[runID] = slices.Clone(fs)
	return nil
}

// Findings implements store.Store.
func (s *Store) Findings(_ context.Context, runID string) ([]analysis.Finding, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return slices.Clone(s.findings[runID]), nil
}

// PutThresholds implements store.Store.
func (s *Store) PutThresholds(_ context.Context, runID string, rs []thresholds.Result) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	s.judged[runID] = slices.Clone(rs)
	return nil
}

// Thresholds implements store.Store.
func (s *Store) Thresholds(_ context.Context, runID string) ([]thresholds.Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return slices.Clone(s.judged[runID]), nil
}

// Close implements store.Store.
func (s *Store) Close() error { return nil }

// PutNotification implements store.Store.
func (s *Store) PutNotification(_ context.Context, n store.Notification) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	if n.ComparisonID != "" {
		s.compNotes[n.ComparisonID] = append(s.compNotes[n.ComparisonID], n)
		return nil
	}
	s.notes[n.RunID] = append(s.notes[n.RunID], n)
	return nil
}

// ComparisonNotifications implements store.Store.
func (s *Store) ComparisonNotifications(_ context.Context, id string) ([]store.Notification, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return slices.Clone(s.compNotes[id]), nil
}

// Notifications implements store.Store.
func (s *Store) Notifications(_ context.Context, runID string) ([]store.Notification, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	return slices.Clone(s.notes[runID]), nil
}

// PutComparison implements store.Store.
func (s *Store) PutComparison(_ context.Context, c store.Comparison) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	rounds := c.Rounds
	if old, ok := s.comps[c.ID]; ok {
		c.Rounds = old.Rounds
	} else {
		c.Rounds = nil
	}
	for _, r := range rounds {
		c.Rounds = upsertRound(c.Rounds, r)
	}
	s.comps[c.ID] = c
	return nil
}

func upsertRound(rs []store.Round, r store.Round) []store.Round {
	rs = slices.Clone(rs)
	for i := range rs {
		if rs[i].Index == r.Index {
			rs[i] = r
			return rs
		}
	}
	rs = append(rs, r)
	slices.SortFunc(rs, func(a, b store.Round) int { return a.Index - b.Index })
	return rs
}

// GetComparison implements store.Store.
func (s *Store) GetComparison(_ context.Context, id string) (store.Comparison, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	c, ok := s.comps[id]
	if !ok {
		return store.Comparison{}, fmt.Errorf("comparison %s: %w", id, store.ErrNotFound)
	}
	c.Rounds = slices.Clone(c.Rounds)
	return c, nil
}

// ListComparisons implements store.Store (newest first, Status and Name filters).
func (s *Store) ListComparisons(_ context.Context, opts store.ListOptions) ([]store.Comparison, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	var out []store.Comparison
	for _, c := range s.comps {
		if (opts.Status == "" || c.Status == opts.Status) && (opts.Name == "" || c.Name == opts.Name) && (opts.Schedule == "" || c.Schedule == opts.Schedule) {
			c.Rounds = slices.Clone(c.Rounds)
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	out = out[min(max(opts.Offset, 0), len(out)):]
	if opts.Limit > 0 && len(out) > opts.Limit {
		out = out[:opts.Limit]
	}
	return out, nil
}

// CountComparisons implements store.Store.
func (s *Store) CountComparisons(ctx context.Context, opts store.ListOptions) (int, error) {
	opts.Limit, opts.Offset = 0, 0
	cs, err := s.ListComparisons(ctx, opts)
	return len(cs), err
}

// PutRound implements store.Store.
func (s *Store) PutRound(_ context.Context, id string, r store.Round) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	c, ok := s.comps[id]
	if !ok {
		return fmt.Errorf("comparison %s: %w", id, store.ErrNotFound)
	}
	c.Rounds = upsertRound(c.Rounds, r)
	s.comps[id] = c
	return nil
}

// SetComparisonStatus implements store.Store.
func (s *Store) SetComparisonStatus(_ context.Context, id string, st store.Status, reason string, at time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	c, ok := s.comps[id]
	if !ok {
		return fmt.Errorf("comparison %s: %w", id, store.ErrNotFound)
	}
	c.Status, c.Reason = st, reason
	stampTimes(st, at, &c.StartedAt, &c.EndedAt)
	s.comps[id] = c
	return nil
}

// RoundOfRun implements store.Store.
func (s *Store) RoundOfRun(_ context.Context, runID string) (string, store.Round, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	ids := make([]string, 0, len(s.comps))
	for id := range s.comps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		for _, r := range s.comps[id].Rounds {
			if runID != "" && r.RunID == runID {
				return id, r, nil
			}
		}
	}
	return "", store.Round{}, fmt.Errorf("round of run %s: %w", runID, store.ErrNotFound)
}

// Provisioner is a fake provisioner: environments are records that are
// "up" until Kill or Teardown. The zero value is ready to use.
type Provisioner struct {
	mu    sync.Mutex
	alive map[string]bool
	// Provisioned and TornDown list environment ids in call order.
	Provisioned []string
	TornDown    []string
	// Fail, if set, makes Provision fail with it.
	Fail error
	// Restarted lists the environment ids whose target RestartTarget
	// started again, in call order.
	Restarted []string
	// RestartFail, if set, makes RestartTarget fail with it.
	RestartFail error
	// Exits makes Check of a killed environment say how its target
	// stopped (an error carrying a window.EventTargetExit, as package
	// provision's ExitError does), so drives record it in their windows.
	Exits bool
}

// TargetExit is Check's error for a killed environment when
// Provisioner.Exits is set.
type TargetExit struct{ ID string }

func (e TargetExit) Error() string { return e.ID + ": target exited (signal 9: killed)" }

// FaultEvent is the event a drive records.
func (e TargetExit) FaultEvent() window.Event {
	return window.Event{Kind: window.EventTargetExit, Signal: 9, Detail: "the target of " + e.ID + " exited (signal 9: killed)"}
}

var (
	_ activities.Provisioner     = (*Provisioner)(nil)
	_ activities.TargetRestarter = (*Provisioner)(nil)
)

// RestartTarget implements activities.TargetRestarter: the environment is
// up again, with the same id, as incarnation req.Incarnation.
func (p *Provisioner) RestartTarget(_ context.Context, env activities.Environment, req activities.ProvisionRequest) (activities.Environment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.RestartFail != nil {
		return env, p.RestartFail
	}
	if p.alive == nil {
		p.alive = map[string]bool{}
	}
	p.alive[env.ID] = true
	p.Restarted = append(p.Restarted, env.ID)
	env.Incarnation = req.Incarnation
	return env, nil
}

// Provision implements activities.Provisioner.
func (p *Provisioner) Provision(_ context.Context, req activities.ProvisionRequest) (activities.Environment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.Fail != nil {
		return activities.Environment{}, p.Fail
	}
	if p.alive == nil {
		p.alive = map[string]bool{}
	}
	id := fmt.Sprintf("%s-%d", req.RunID, req.Incarnation)
	p.alive[id] = true
	p.Provisioned = append(p.Provisioned, id)
	url := req.Spec.Target.URL
	if url == "" {
		url = "http://127.0.0.1:9"
	}
	return activities.Environment{ID: id, RunID: req.RunID, Incarnation: req.Incarnation, Provider: "fake", Host: "test", TargetURL: url}, nil
}

// Teardown implements activities.Provisioner.
func (p *Provisioner) Teardown(_ context.Context, env activities.Environment) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.alive, env.ID)
	p.TornDown = append(p.TornDown, env.ID)
	return nil
}

// ErrGone is Check's error for an environment that is not up.
var ErrGone = errors.New("environment is not up")

// Check implements activities.Provisioner.
func (p *Provisioner) Check(_ context.Context, env activities.Environment) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.alive[env.ID] {
		if p.Exits {
			return TargetExit{env.ID}
		}
		return fmt.Errorf("%s: %w", env.ID, ErrGone)
	}
	return nil
}

// Kill makes environment id fail its checks, as if its target died.
func (p *Provisioner) Kill(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.alive, id)
}

// Up reports whether environment id is up.
func (p *Provisioner) Up(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.alive[id]
}

// Driver is a fake load driver: it emits the windows FirstIndex..slots-1
// at once (no real load, no sleeping), each with Requests = OK = 100 and the
// call number in Dropped so tests can tell attempts apart.
type Driver struct {
	mu sync.Mutex
	// Calls records every call's request.
	Calls []activities.DriveRequest
	// Before, if set, runs before window index is handed to the sink on
	// call number call (1-based). Returning an error stops the drive with
	// it; it may block on ctx.
	Before func(ctx context.Context, call int, index int) error
	// Decorate, if set, fills each window (latency histogram, probes)
	// before it is handed to the sink.
	Decorate func(req activities.DriveRequest, w *window.Window)
	// Records, if set, answers Record (the equivalence check's sequences);
	// nil answers every request with 200 {}.
	Records func(req activities.RecordRequest) []equivalence.Exchange
	// Shape, if set, changes window index of call number call before it is
	// handed to the sink (say, to give it latencies a threshold judges).
	Shape func(call, index int, w *window.Window)
}

var _ activities.Driver = (*Driver)(nil)

// Drive implements activities.Driver.
func (d *Driver) Drive(ctx context.Context, req activities.DriveRequest, sink func(window.Window) error) error {
	d.mu.Lock()
	d.Calls = append(d.Calls, req)
	call := len(d.Calls)
	before, decorate, shape := d.Before, d.Decorate, d.Shape
	d.mu.Unlock()
	length := req.Scenario.Load.Window.D()
	total := int((req.Scenario.Load.Duration.D() + length - 1) / length)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := req.FirstIndex; i < total; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if before != nil {
			if err := before(ctx, call, i); err != nil {
				return err
			}
		}
		w := window.Window{
			Index: i, Start: start.Add(time.Duration(i) * length), End: start.Add(time.Duration(i+1) * length),
			Requests: 100, OK: 100, Dropped: int64(call),
		}
		if decorate != nil {
			decorate(req, &w)
		}
		if shape != nil {
			shape(call, i, &w)
		}
		if err := sink(w); err != nil {
			return err
		}
	}
	return nil
}

var _ activities.Recorder = (*Driver)(nil)

// Record implements activities.Recorder.
func (d *Driver) Record(_ context.Context, req activities.RecordRequest) ([]equivalence.Exchange, error) {
	d.mu.Lock()
	records := d.Records
	d.mu.Unlock()
	if records != nil {
		return records(req), nil
	}
	xs := make([]equivalence.Exchange, req.Requests)
	for i := range xs {
		xs[i] = equivalence.Exchange{Op: "get", Method: "GET", Path: "/", Status: 200, Body: []byte("{}")}
	}
	return xs, nil
}

// CallCount returns how many times Drive was called.
func (d *Driver) CallCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.Calls)
}

// CountRuns implements store.Store.
func (s *Store) CountRuns(ctx context.Context, opts store.ListOptions) (int, error) {
	runs, err := s.ListRuns(ctx, opts)
	return len(runs), err
}

// Counts implements store.Store.
func (s *Store) Counts(_ context.Context, ids []string) (map[string]store.RunCounts, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.init()
	out := map[string]store.RunCounts{}
	for _, id := range ids {
		var c store.RunCounts
		for _, w := range s.windows[id] {
			c.Windows++
			if w.Gap {
				c.Gaps++
			}
		}
		for _, f := range s.findings[id] {
			if c.Findings == nil {
				c.Findings = map[analysis.Severity]int{}
			}
			c.Findings[f.Severity]++
		}
		if c.Windows > 0 || c.Findings != nil {
			out[id] = c
		}
	}
	return out, nil
}

// Spans implements store.Store: windows in the range merged with
// window.Combine in buckets of 8^L indexes, as the SQL store does.
func (s *Store) Spans(ctx context.Context, runID string, q store.SpanQuery) ([]store.Span, error) {
	ws, err := s.Windows(ctx, runID, store.WindowQuery{Incarnation: -1, FromIndex: q.FromIndex})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ws, func(a, b window.Window) int { return a.Index - b.Index })
	if q.ToIndex > 0 {
		ws = slices.DeleteFunc(ws, func(w window.Window) bool { return w.Index >= q.ToIndex })
	}
	maxPoints := q.MaxPoints
	if maxPoints <= 0 {
		maxPoints = store.DefaultMaxPoints
	}
	size := 1
	for len(ws) > 0 && (ws[len(ws)-1].Index-ws[0].Index)/size+1 > maxPoints && size < 512 {
		size *= 8
	}
	var out []store.Span
	for i := 0; i < len(ws); {
		j := i
		for j < len(ws) && ws[j].Index/size == ws[i].Index/size {
			j++
		}
		w, err := window.Combine(ws[i:j])
		if err != nil {
			return nil, err
		}
		if size == 1 {
			w = ws[i]
		}
		w.Histogram = nil
		sp := store.Span{Window: w, LastIndex: ws[j-1].Index, LastIncarnation: ws[j-1].Incarnation, Windows: j - i}
		for _, g := range ws[i:j] {
			if g.Gap {
				sp.Gaps++
			}
		}
		if !q.Ops {
			sp.Ops = nil
		}
		out = append(out, sp)
		i = j
	}
	return out, nil
}

// ClaimSlot implements store.Store.
func (s *Store) ClaimSlot(_ context.Context, sl store.Slot, n int) (bool, []store.Slot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	held := s.hostSlotsLocked(sl.Host)
	for _, h := range held {
		if h.Holder == sl.Holder {
			return true, held, nil
		}
	}
	if len(held) >= n {
		return false, held, nil
	}
	s.slots = slices.DeleteFunc(s.slots, func(h store.Slot) bool { return h.Holder == sl.Holder })
	s.slots = append(s.slots, sl)
	return true, append(held, sl), nil
}

// ReleaseSlot implements store.Store.
func (s *Store) ReleaseSlot(_ context.Context, holder string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slots = slices.DeleteFunc(s.slots, func(h store.Slot) bool { return h.Holder == holder })
	return nil
}

// HostSlots implements store.Store.
func (s *Store) HostSlots(_ context.Context, host string) ([]store.Slot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hostSlotsLocked(host), nil
}

func (s *Store) hostSlotsLocked(host string) []store.Slot {
	var out []store.Slot
	for _, h := range s.slots {
		if host == "" || h.Host == host {
			out = append(out, h)
		}
	}
	return out
}
