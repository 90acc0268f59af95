package probes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// Defaults of the probes section, as documented on scenarios.Probes.
const (
	DefaultMetricPath     = "/metrics"
	DefaultMetricName     = "go_gc_heap_live_bytes"
	DefaultGCHookPath     = "/debug/gc"
	DefaultGCHookEvery    = 5
	DefaultInspectorHost  = "127.0.0.1"
	DefaultInspectorPort  = 9229
	DefaultInspectorEvery = 1

	// DefaultMaxSampleTime caps how long one Sample may take.
	DefaultMaxSampleTime = time.Second
	// DefaultDatabaseDelay is how long after a window's end its database
	// reading is taken (see Config.DatabaseDelay).
	DefaultDatabaseDelay = 500 * time.Millisecond
	// ReminderInterval is the least time between two log lines about the
	// same failing probe.
	ReminderInterval = 10 * time.Minute
	// startTimeout bounds Start.
	startTimeout = 5 * time.Second
	// minSampleTime is the least time a Sample gives its probes.
	minSampleTime = 50 * time.Millisecond
)

// ErrBadConfig is wrapped by every configuration error New returns; the
// message is one line that names the setting.
var ErrBadConfig = errors.New("bad probes config")

// Probe names, as used in logs and Problems.
const (
	ProbeProcess   = "process"
	ProbeMetric    = "heap.metric"
	ProbeGCHook    = "heap.gc_hook"
	ProbeInspector = "heap.inspector"
	ProbeDatabase  = "database"
	ProbeSQLite    = "database.sqlite"
	ProbeConns     = "connections"
	// ProbeThreads is ThreadCPU, which the caller runs beside the Sampler.
	ProbeThreads = "threads"
)

// Config says what to sample and where.
type Config struct {
	// Spec is the scenario's probes section; unset fields take the defaults
	// documented on scenarios.Probes.
	Spec scenarios.Probes
	// TargetURL is the loopback base URL of the target (for the heap metric
	// and the GC hook).
	TargetURL string
	// PID is the local target process: the process probe sums it and all its
	// descendants. ContainerID is a docker target: the process probe reads
	// its cgroup through the Docker API. With both, ContainerID wins.
	PID         int
	ContainerID string
	// Dial opens the connections to the target for the heap metric, the GC
	// hook and the inspector; nil means a plain net.Dialer. With a dialer
	// that connects inside the target container's network namespace
	// (netns.Namespace.DialContext), TargetURL and the inspector's host and
	// port are addresses in that namespace.
	Dial DialFunc
	// TCPTables reads the TCP socket tables of the network namespace the
	// target listens in (ProcTCPTables for a local process; read inside the
	// container's namespace for a docker target). With it, and a target
	// longhaul runs, the connections probe counts the target's connections
	// on TargetURL's port each window (ConnCounter). Nil: no such probe.
	TCPTables func() ([][]byte, error)
	// DatabaseURL is the target's database, reachable from this host, in its
	// own URL scheme: postgres:// (or a PostgreSQL key=value DSN),
	// mysql:// or mariadb:// (MySQLStatsReader), mongodb://
	// (MongoStatsReader).
	// "" if none.
	DatabaseURL string
	// DatabaseBackendURL is, for a FerretDB the local provider runs, the
	// PostgreSQL database it keeps its collections in (postgres://, on
	// this host): the MongoDB probe reads each collection's reads from its
	// statistics (MongoStatsReader.SetBackend). "" otherwise.
	DatabaseBackendURL string
	// SQLitePath is the rendered probes.database.sqlite, a path on this host
	// (for a container target, in its environment volume: {{.EnvDir}} is
	// rendered as the volume's path here). "" means the scenario's path as
	// written (it must then hold no template).
	SQLitePath string
	// Window is the run's window length. A Sample gives its probes at most
	// min(MaxSampleTime, Window/4); with Window 0 the sampled window's own
	// length is used.
	Window time.Duration
	// MaxSampleTime: 0 means DefaultMaxSampleTime.
	MaxSampleTime time.Duration
	// DatabaseDelay: the database reading of a window is taken this long
	// after the window's end (within the Sample's budget). PostgreSQL backends
	// publish their statistics at most once a second (PGSTAT_MIN_INTERVAL,
	// PostgreSQL 15+; the older statistics collector had a similar delay),
	// so a reading at time t sees activity up to somewhere in [t-1s, t]:
	// read at the window's end, every window's figures would be ~0.5 s late
	// on average. 0 means DefaultDatabaseDelay; negative means no delay.
	// A MongoDB server (MongoStatsReader) is read without delay.
	DatabaseDelay time.Duration
	// Logger receives one line when a probe first fails (and at most one
	// reminder per ReminderInterval); nil means slog.Default().
	Logger *slog.Logger
}

// DialFunc opens a TCP connection, as net.Dialer.DialContext does.
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// Sampler takes the server-side readings of a run, window by window. Create
// it with New, call Start when load starts and Sample when each window
// closes (from one goroutine at a time), and Close at the end.
type Sampler struct {
	log           *slog.Logger
	window        time.Duration
	maxSample     time.Duration
	databaseDelay time.Duration

	proc      *ProcessTree
	ctr       *ContainerStats
	metric    *MetricScraper
	hook      *GCHookClient
	insp      *InspectorClient
	db        databaseReader // swapped by FollowDatabase under dbMu
	dbBackend string         // a FerretDB's PostgreSQL (Config.DatabaseBackendURL), kept by FollowDatabase
	dbMu      sync.Mutex     // guards db: a reading left over from a Sample may run beside FollowDatabase
	sqlite    *SQLiteReader
	conns     *ConnCounter
	sources   []*source

	hookEvery, inspEvery int

	mu      sync.Mutex // serialises Start, Sample, Close and Problems
	seq     int
	cpuPrev ProcessReading
	cpuSeq  int // seq of cpuPrev; -1 none
	pgPrev  PGStats
	pgSeq   int
	mgPrev  *MongoTotals // a MongoDB database's totals of reading pgSeq
	gcPrev  []Bucket     // GC pause histogram of the metric's reading gcSeq
	gcSeq   int
	goPrev  GoCounters // Go runtime counters of the metric's reading goSeq
	goSeq   int
	closed  bool
	wg      sync.WaitGroup // readings still running
}

// source is one probe's state.
type source struct {
	name string
	read func(ctx context.Context, w *window.Window, dbReadAt time.Time) reading
	due  func(w *window.Window) bool
	busy atomic.Bool // a reading is running (maybe left over from a previous Sample)

	// Failure bookkeeping, guarded by Sampler.mu.
	failing       bool
	failures      int
	firstFail     time.Time
	lastErr       string
	lastLog       time.Time
	everLogged    bool
	episodeLogged bool
}

type reading struct {
	proc   ProcessReading
	heap   int64
	pg     PGStats
	mongo  *MongoTotals
	sqlite window.SQLite
	node   *window.NodeMemory
	conns  window.Connections
	loop   *window.Pauses // event-loop delay (Node.js)
	gc     []Bucket       // GC pause histogram (Go metrics page)
	goc    GoCounters     // Go runtime counters (Go metrics page)
	err    error
}

// Problem describes a probe that is failing now.
type Problem struct {
	Probe    string    `json:"probe"`
	Message  string    `json:"message"`
	Failures int       `json:"failures"` // consecutive
	Since    time.Time `json:"since"`
}

// New checks cfg and prepares the probes it enables. It returns only
// configuration errors (wrapping ErrBadConfig); it contacts nothing.
//
// Which probes run: process when Spec.Process is true, or unset and the
// target is a local process or a container; database when Spec.Database is
// true, or unset and DatabaseURL is set; each heap source present in
// Spec.Heap.
func New(cfg Config) (*Sampler, error) {
	s := &Sampler{
		log:           cfg.Logger,
		window:        cfg.Window,
		maxSample:     cfg.MaxSampleTime,
		databaseDelay: cfg.DatabaseDelay,
		cpuSeq:        -1,
		pgSeq:         -1,
		gcSeq:         -1,
		goSeq:         -1,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxSample <= 0 {
		s.maxSample = DefaultMaxSampleTime
	}
	if s.databaseDelay == 0 {
		s.databaseDelay = DefaultDatabaseDelay
	}
	spec := cfg.Spec
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBadConfig, fmt.Sprintf(format, args...))
	}

	// Process.
	runsTarget := cfg.PID > 0 || cfg.ContainerID != ""
	if spec.Process != nil && *spec.Process && !runsTarget {
		return nil, bad("probes.process: the target is not a process longhaul runs (a bare url); remove process: true or let longhaul provision the target")
	}
	if (spec.Process == nil || *spec.Process) && runsTarget {
		if cfg.ContainerID != "" {
			c, err := NewContainerStats(cfg.ContainerID)
			if err != nil {
				return nil, bad("probes.process: %v", err)
			}
			s.ctr = c
		} else {
			p, err := NewProcessTree(cfg.PID)
			if err != nil {
				return nil, bad("probes.process: %v", err)
			}
			if _, err := ClockTicksPerSecond(); err != nil {
				s.log.Warn("probes: clock ticks per second unknown", "err", err)
			}
			s.proc = p
		}
		s.add(ProbeProcess, s.readProcess, nil)
		if cfg.TCPTables != nil {
			port, err := urlPort(cfg.TargetURL)
			if err == nil {
				s.conns, err = NewConnCounter(port, cfg.TCPTables)
			}
			if err != nil {
				return nil, bad("probes: %v", err)
			}
			s.add(ProbeConns, s.readConns, nil)
		}
	}

	// Heap.
	if h := spec.Heap; h != nil {
		if h.Metric == nil && h.GCHook == nil && h.Inspector == nil {
			return nil, bad("probes.heap: set at least one of metric, gc_hook, inspector")
		}
		var base *url.URL
		if h.Metric != nil || h.GCHook != nil {
			u, err := url.Parse(cfg.TargetURL)
			if cfg.TargetURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return nil, bad("probes.heap: the heap metric and gc_hook need the target's http URL, got %q", cfg.TargetURL)
			}
			base = u
		}
		if m := h.Metric; m != nil {
			path := cmpOr(m.Path, DefaultMetricPath)
			name := cmpOr(m.Name, DefaultMetricName)
			if !strings.HasPrefix(path, "/") {
				return nil, bad("probes.heap.metric.path %q: must start with /", path)
			}
			if !ValidMetricName(name) {
				return nil, bad("probes.heap.metric.name %q: not a Prometheus metric name (letters, digits, _ and :, not starting with a digit)", name)
			}
			s.metric = NewMetricScraper(joinURL(base, path), name)
			s.metric.client = newHTTPClient(cfg.Dial)
			s.add(ProbeMetric, s.readMetric, nil)
		}
		if g := h.GCHook; g != nil {
			path := cmpOr(g.Path, DefaultGCHookPath)
			if !strings.HasPrefix(path, "/") {
				return nil, bad("probes.heap.gc_hook.path %q: must start with /", path)
			}
			if g.Every < 0 {
				return nil, bad("probes.heap.gc_hook.every %d: must be at least 1", g.Every)
			}
			s.hookEvery = cmpOr(g.Every, DefaultGCHookEvery)
			s.hook = NewGCHookClient(joinURL(base, path))
			s.hook.client = newHTTPClient(cfg.Dial)
			s.add(ProbeGCHook, s.readGCHook, func(w *window.Window) bool { return everyN(w.Index, s.hookEvery) })
		}
		if in := h.Inspector; in != nil {
			host := cmpOr(in.Host, DefaultInspectorHost)
			port := cmpOr(in.Port, DefaultInspectorPort)
			if port < 1 || port > 65535 {
				return nil, bad("probes.heap.inspector.port %d: must be 1..65535", port)
			}
			if !isLoopback(host) {
				// The inspector can run any code in the target: never reach
				// for one off this host.
				return nil, bad("probes.heap.inspector.host %q: must be a loopback address (127.0.0.1, ::1, localhost)", host)
			}
			if in.Every < 0 {
				return nil, bad("probes.heap.inspector.every %d: must be at least 1", in.Every)
			}
			s.inspEvery = cmpOr(in.Every, DefaultInspectorEvery)
			s.insp = NewInspectorClient(net.JoinHostPort(host, strconv.Itoa(port)))
			s.insp.http = newHTTPClient(cfg.Dial)
			s.add(ProbeInspector, s.readInspector, func(w *window.Window) bool { return everyN(w.Index, s.inspEvery) })
		}
	}

	// Database.
	pgOn, pgSet := spec.PostgresOn()
	if pgSet && pgOn && cfg.DatabaseURL == "" {
		return nil, bad("probes.database: there is no database to sample; set environment.database.kind (postgres, mysql, mariadb, mongodb) or remove database: true")
	}
	if tmpl := spec.SQLitePath(); tmpl != "" {
		path := cfg.SQLitePath
		if path == "" {
			path = tmpl
		}
		if strings.Contains(path, "{{") {
			return nil, bad("probes.database.sqlite %q: the path was not rendered (Config.SQLitePath)", tmpl)
		}
		s.sqlite = NewSQLiteReader(path)
		s.add(ProbeSQLite, s.readSQLite, nil)
	}
	if (!pgSet || pgOn) && cfg.DatabaseURL != "" {
		r, err := newDatabaseReader(cfg.DatabaseURL, cfg.DatabaseBackendURL)
		s.dbBackend = cfg.DatabaseBackendURL
		if err != nil {
			return nil, bad("probes.database: %v", err)
		}
		s.db = r
		s.add(ProbeDatabase, s.readDatabase, nil)
	}
	return s, nil
}

// databaseReader reads a database's cumulative statistics in PostgreSQL's
// shape (PGStats), whatever the database: PGStatsReader, MySQLStatsReader,
// MongoStatsReader.
type databaseReader interface {
	Read(ctx context.Context) (PGStats, error)
	Close() error
}

var (
	_ databaseReader = (*PGStatsReader)(nil)
	_ databaseReader = (*MySQLStatsReader)(nil)
	_ databaseReader = (*MongoStatsReader)(nil)
)

// newDatabaseReader picks the reader for rawURL's scheme; backend is a
// FerretDB's PostgreSQL database, or "".
func newDatabaseReader(rawURL, backend string) (databaseReader, error) {
	scheme, _, _ := strings.Cut(rawURL, "://")
	switch strings.ToLower(scheme) {
	case "mysql", "mariadb":
		return NewMySQLStatsReader(rawURL)
	case "mongodb", "mongodb+srv":
		r, err := NewMongoStatsReader(rawURL)
		if err == nil && backend != "" {
			err = r.SetBackend(backend)
		}
		return r, err
	}
	return NewPGStatsReader(rawURL)
}

func (s *Sampler) add(name string, read func(context.Context, *window.Window, time.Time) reading, due func(*window.Window) bool) {
	s.sources = append(s.sources, &source{name: name, read: read, due: due})
}

// Probes lists the enabled probes by name (ProbeProcess, ...).
func (s *Sampler) Probes() []string {
	names := make([]string, len(s.sources))
	for i, src := range s.sources {
		names[i] = src.name
	}
	return names
}

// Start takes the baselines (CPU counter, database statistics) that the first
// window's deltas are taken from, and checks that the heap metric and the
// inspector answer. It takes at most a few seconds. Problems are logged
// once and listed by Problems; none is fatal. Call it once, when load starts.
func (s *Sampler) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	// The probes start concurrently, so one slow to answer does not eat the
	// others' time.
	readings := make([]reading, len(s.sources))
	ran := make([]bool, len(s.sources))
	var wg sync.WaitGroup
	for i, src := range s.sources {
		if src.name == ProbeGCHook {
			continue // a GC is not forced before load starts
		}
		if !src.busy.CompareAndSwap(false, true) {
			continue // Start after Sample: a reading is already running
		}
		ran[i] = true
		wg.Go(func() {
			defer src.busy.Store(false)
			if src.name == ProbeInspector {
				readings[i].err = s.insp.Connect(ctx)
				return
			}
			readings[i] = src.read(ctx, nil, time.Time{})
		})
	}
	wg.Wait()
	for i, src := range s.sources {
		if !ran[i] {
			continue
		}
		r := readings[i]
		if r.err != nil {
			s.failed(src, fmt.Errorf("at start: %w", r.err))
			continue
		}
		s.succeeded(src)
		switch src.name {
		case ProbeProcess:
			s.cpuPrev, s.cpuSeq = r.proc, s.seq
		case ProbeDatabase:
			s.pgPrev, s.pgSeq, s.mgPrev = r.pg, s.seq, r.mongo
		case ProbeMetric:
			if r.gc != nil {
				s.gcPrev, s.gcSeq = r.gc, s.seq
			}
			if r.goc.Any() {
				s.goPrev, s.goSeq = r.goc, s.seq
			}
		}
	}
}

// Sample fills w.Probes for the window that just closed (w.Index, w.End and
// w.Requests must be set). It never fails: a probe that errs or does not
// answer within the Sample's budget (min(MaxSampleTime, window/4)) leaves
// its fields nil and is logged as described on Config.Logger. Probes run
// concurrently; a probe whose previous reading is still running is skipped.
// Deltas (CPU, database, a Go target's allocation and GC counters) are only
// given when the previous window was read too, so a reading never spans more
// than one window; a Go counter that went down (the target restarted) gives
// none either. The readings use ctx:
// for the last window of a run that is being stopped, pass a context that
// is not cancelled yet (context.WithoutCancel).
func (s *Sampler) Sample(ctx context.Context, w *window.Window) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.seq++
	seq := s.seq
	start := time.Now()
	budget := s.budget(w)
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	var dbReadAt time.Time
	if s.databaseDelay > 0 && !w.End.IsZero() {
		dbReadAt = w.End.Add(s.databaseDelay)
		if limit := start.Add(budget * 2 / 3); dbReadAt.After(limit) {
			dbReadAt = limit
		}
	}

	type result struct {
		i int
		r reading
	}
	results := make(chan result, len(s.sources))
	got := make([]*reading, len(s.sources))
	const notDue, skipped, running = 0, 1, 2
	state := make([]uint8, len(s.sources))
	launched := 0
	for i, src := range s.sources {
		if src.due != nil && !src.due(w) {
			continue
		}
		if !src.busy.CompareAndSwap(false, true) {
			state[i] = skipped
			s.failed(src, errors.New("its previous reading is still running"))
			continue
		}
		state[i] = running
		launched++
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			r := src.read(ctx, w, dbReadAt)
			src.busy.Store(false)
			results <- result{i, r}
		}()
	}
collect:
	for launched > 0 {
		select {
		case res := <-results:
			launched--
			got[res.i] = &res.r
		case <-ctx.Done():
			break collect
		}
	}

	var heap, forced *int64
	for i, src := range s.sources {
		r := got[i]
		if state[i] == notDue {
			continue
		}
		if r == nil {
			if state[i] == running {
				s.failed(src, fmt.Errorf("no answer within %v", budget))
			}
			s.invalidate(src)
			continue
		}
		if r.err != nil {
			s.failed(src, r.err)
			s.invalidate(src)
			continue
		}
		s.succeeded(src)
		switch src.name {
		case ProbeProcess:
			rss := r.proc.RSSBytes
			w.Probes.RSSBytes = &rss
			if s.cpuSeq == seq-1 {
				if d := r.proc.CPUSeconds - s.cpuPrev.CPUSeconds; d >= 0 {
					w.Probes.CPUSeconds = &d
					if w.Requests > 0 {
						us := d * 1e6 / float64(w.Requests)
						w.Probes.CPUMicrosPerRequest = &us
					}
				}
			}
			s.cpuPrev, s.cpuSeq = r.proc, seq
		case ProbeDatabase:
			if s.pgSeq == seq-1 {
				w.Probes.Database = DatabaseDelta(s.pgPrev, r.pg, w.Requests)
				if r.mongo != nil && s.mgPrev != nil {
					MongoDelta(w.Probes.Database, *s.mgPrev, *r.mongo, w.Requests)
				}
			}
			s.pgPrev, s.pgSeq, s.mgPrev = r.pg, seq, r.mongo
		case ProbeSQLite:
			sq := r.sqlite
			w.Probes.SQLite = &sq
		case ProbeConns:
			c := r.conns
			w.Probes.Connections = &c
		case ProbeMetric:
			heap = &r.heap
			if r.gc != nil && s.gcSeq == seq-1 {
				w.Probes.GCPause = PausesDelta(s.gcPrev, r.gc)
			}
			if r.gc != nil {
				s.gcPrev, s.gcSeq = r.gc, seq
			} else {
				s.gcSeq = -1
			}
			if r.goc.Any() && s.goSeq == seq-1 {
				GoCountersDelta(&w.Probes, s.goPrev, r.goc, w.Requests)
			}
			if r.goc.Any() {
				s.goPrev, s.goSeq = r.goc, seq
			} else {
				s.goSeq = -1
			}
		case ProbeGCHook, ProbeInspector:
			if forced == nil {
				forced = &r.heap
			}
			if src.name == ProbeInspector {
				w.Probes.Node, w.Probes.EventLoopDelay = r.node, r.loop
			}
		}
	}
	switch {
	case forced != nil:
		w.Probes.HeapBytes, w.Probes.HeapForcedGC = forced, true
	case heap != nil:
		w.Probes.HeapBytes = heap
	}
	GCCPUShare(&w.Probes)
}

// invalidate drops a probe's baseline, so the next delta is not taken
// across a window that was not read.
func (s *Sampler) invalidate(src *source) {
	switch src.name {
	case ProbeProcess:
		s.cpuSeq = -1
	case ProbeDatabase:
		s.pgSeq = -1
	case ProbeMetric:
		s.gcSeq, s.goSeq = -1, -1
	}
}

func (s *Sampler) budget(w *window.Window) time.Duration {
	b := s.maxSample
	win := s.window
	if win <= 0 {
		win = w.Duration()
	}
	if win > 0 && win/4 < b {
		b = win / 4
	}
	return max(b, minSampleTime)
}

func (s *Sampler) failed(src *source, err error) {
	now := time.Now()
	if !src.failing {
		src.failing, src.firstFail, src.failures, src.episodeLogged = true, now, 0, false
	}
	src.failures++
	src.lastErr = err.Error()
	if !src.everLogged || now.Sub(src.lastLog) >= ReminderInterval {
		msg := "probe failed; its readings stay empty until it recovers"
		if src.everLogged {
			msg = "probe still failing"
		}
		s.log.Warn(msg, "probe", src.name, "failures", src.failures, "since", src.firstFail.Format(time.RFC3339), "err", src.lastErr)
		src.everLogged, src.episodeLogged, src.lastLog = true, true, now
	}
}

func (s *Sampler) succeeded(src *source) {
	if !src.failing {
		return
	}
	if src.episodeLogged {
		s.log.Info("probe recovered", "probe", src.name, "failures", src.failures)
	}
	src.failing, src.failures, src.lastErr = false, 0, ""
}

// Problems lists the probes failing now, by name.
func (s *Sampler) Problems() []Problem {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ps []Problem
	for _, src := range s.sources {
		if src.failing {
			ps = append(ps, Problem{Probe: src.name, Message: src.lastErr, Failures: src.failures, Since: src.firstFail})
		}
	}
	slices.SortFunc(ps, func(a, b Problem) int { return strings.Compare(a.Probe, b.Probe) })
	return ps
}

// Close waits for readings still running (their deadlines have passed) and
// releases connections. It is idempotent; Sample does nothing after it.
func (s *Sampler) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.wg.Wait()
	var errs []error
	if s.ctr != nil {
		errs = append(errs, s.ctr.Close())
	}
	if s.insp != nil {
		errs = append(errs, s.insp.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	if s.sqlite != nil {
		errs = append(errs, s.sqlite.Close())
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close probes: %w", err)
	}
	return nil
}

func (s *Sampler) readProcess(ctx context.Context, _ *window.Window, _ time.Time) reading {
	var r reading
	if s.ctr != nil {
		r.proc, r.err = s.ctr.Read(ctx)
	} else {
		r.proc, r.err = s.proc.Read()
	}
	return r
}

func (s *Sampler) readMetric(ctx context.Context, _ *window.Window, _ time.Time) reading {
	m, err := s.metric.ReadRuntime(ctx)
	return reading{heap: m.Heap, gc: m.Pauses, goc: m.Go, err: err}
}

func (s *Sampler) readGCHook(ctx context.Context, _ *window.Window, _ time.Time) reading {
	n, err := s.hook.Collect(ctx)
	return reading{heap: n, err: err}
}

func (s *Sampler) readInspector(ctx context.Context, _ *window.Window, _ time.Time) reading {
	r, err := s.insp.NodeAfterGC(ctx)
	return reading{heap: r.HeapBytes, node: r.Memory, loop: r.EventLoopDelay, err: err}
}

func (s *Sampler) readDatabase(ctx context.Context, _ *window.Window, at time.Time) reading {
	db := s.database()
	m, isMongo := db.(*MongoStatsReader)
	// A MongoDB server's counters and counts are current when asked (no
	// statistics interval to wait out, as PostgreSQL's): it reads at once
	// and has the whole budget, which a saturated server (FerretDB scanning
	// a collection per request) needs. A FerretDB read through its
	// PostgreSQL's statistics reads at once too: the server it reads is the
	// one the scans saturate, and PostgreSQL publishing a busy backend's
	// statistics each second only moves reads between neighbouring
	// windows (measured: with the delay, 4 of 25 two-second windows missed
	// the budget while the tests of other packages shared the cores).
	if d := time.Until(at); d > 0 && !isMongo {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return reading{err: fmt.Errorf("database probe: %w", ctx.Err())}
		}
	}
	if isMongo {
		st, tot, err := m.ReadTotals(ctx)
		return reading{pg: st, mongo: &tot, err: err}
	}
	st, err := db.Read(ctx)
	return reading{pg: st, err: err}
}

func (s *Sampler) database() databaseReader {
	s.dbMu.Lock()
	defer s.dbMu.Unlock()
	return s.db
}

// FollowDatabase points the database probe at the database as it is after
// a restart: rawURL is its URL now (a container's published port changes
// at a docker start; a local server keeps its URL). A new reader replaces
// the old one, whose connection points at a server that is gone, and a
// baseline is read at once, so the next window's figures are the deltas
// since the restart rather than none. (The server's cumulative statistics
// start again from zero after a crash: a delta across the restart would
// mean nothing.) The other probes, and their baselines, are untouched.
//
// It returns an error when rawURL cannot be read as a database URL (the
// probe then keeps the old reader and stays failing) or the baseline
// could not be read (the next window reads one: its database figures are
// then missing, as after any failed reading). Without a database probe
// (none configured, or probes.database: false) it does nothing.
func (s *Sampler) FollowDatabase(ctx context.Context, rawURL string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.db == nil {
		return nil
	}
	// A FerretDB's PostgreSQL (the backend) is not restarted with it.
	r, err := newDatabaseReader(rawURL, s.dbBackend)
	if err != nil {
		return fmt.Errorf("database probe: follow the restarted database: %w", err)
	}
	s.dbMu.Lock()
	old := s.db
	s.db = r
	s.dbMu.Unlock()
	// The old reader's Close waits for a reading of it still running (its
	// Sample's deadline bounds it) and may wait on a server that is gone (a
	// MongoDB client's disconnect, up to 5 s): not in the drive's way.
	// Close waits for it.
	s.wg.Go(func() { _ = old.Close() })
	s.pgSeq, s.mgPrev = -1, nil
	var src *source
	for _, x := range s.sources {
		if x.name == ProbeDatabase {
			src = x
		}
	}
	if src == nil || !src.busy.CompareAndSwap(false, true) {
		return nil
	}
	defer src.busy.Store(false)
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	rd := s.readDatabase(ctx, nil, time.Time{})
	if rd.err != nil {
		s.failed(src, fmt.Errorf("after the database restarted: %w", rd.err))
		return rd.err
	}
	s.succeeded(src)
	s.pgPrev, s.pgSeq, s.mgPrev = rd.pg, s.seq, rd.mongo
	return nil
}

func (s *Sampler) readConns(context.Context, *window.Window, time.Time) reading {
	c, err := s.conns.Read()
	return reading{conns: c, err: err}
}

func (s *Sampler) readSQLite(ctx context.Context, _ *window.Window, _ time.Time) reading {
	sq, err := s.sqlite.Read(ctx)
	return reading{sqlite: sq, err: err}
}

// everyN reports whether window index i is a checkpoint of a probe run every
// n windows: windows n-1, 2n-1, ... (the last window of each group of n).
func everyN(i, n int) bool { return n <= 1 || (i+1)%n == 0 }

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

func joinURL(base *url.URL, path string) string {
	u := *base
	p, q, _ := strings.Cut(path, "?")
	u.Path = strings.TrimSuffix(u.Path, "/") + p
	u.RawPath = ""
	u.RawQuery = q
	return u.String()
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
