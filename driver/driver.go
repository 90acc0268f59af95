// Package driver is longhaul's load engine: it drives a compiled scenario at
// a loopback HTTP target and cuts what it measures into fixed-length windows.
//
// Recipe:
//
//  1. Compile a scenario (scenarios.Compile) and decide the effective load
//     (the scenario's, with any overrides applied).
//  2. Optionally call CheckTarget, so an unreachable target is one clear
//     error before anything starts.
//  3. Call Run with a sink. The sink receives every window in index order,
//     from a goroutine of its own, and may take its time (write to a
//     database, probe the server): the VUs never wait for it.
//  4. Cancel the context to stop early: in-flight requests get up to
//     Load.Timeout to finish, and the final partial window is still emitted.
//
// Load models (the ideas of k6's executors, not its code):
//
//   - Closed model (Load.VUs): each virtual user sends its next request when
//     the last one returned, plus the op's think time.
//   - Open model (Load.Rate, Load.MaxVUs): iterations start on a fixed
//     schedule whatever the target does. Latency is timed from the intended
//     start, so a stalled target shows up in it (coordinated omission); a
//     start that finds all MaxVUs busy (in an iteration, its think time, or
//     still in setup) is counted in Window.Dropped and never queued.
//
// Both follow Load.Stages: the VU count or the rate moves linearly from one
// stage's target to the next.
//
// Every VU picks ops at random in proportion to their weights and runs the
// scenario's setup steps once before its first op. Requests go over one
// keep-alive HTTP/1.1 connection per VU with a small client of this package
// that costs about as much CPU per request as wrk (see bench/driver).
// Latencies are recorded in HDR histograms (1 µs..60 s, 3 significant
// digits); raw samples are never kept, so memory stays flat over days.
//
// Outcomes are classified (window.Class): ok, 4xx, 5xx and unexpected come
// from the op's expectations; refused, reset, timeout and other from the
// transport; interrupted for requests still in flight when the run stopped
// that did not finish within Load.Timeout. A target that misbehaves is
// measured, never a reason for the driver to fail.
//
// Latencies are recorded for every response, whatever its status, and for
// timeouts (as the time waited); refused, reset, other and interrupted
// requests are counted but have no latency, which would only flatter the
// percentiles.
//
// A request whose connection could not be opened (the target is down or
// restarting) is counted under its class and in Window.ConnectFailures, and
// is not throughput (Window.RPS leaves it out). Its VU then waits before
// dialling again, from ConnectBackoffMin doubling to ConnectBackoffMax, and
// starts over at the minimum after a connection opens: a dead target costs
// the machine a few dials a second per VU, not a core of refused connects.
// In the open model a VU backing off is busy, so the starts it misses are
// Dropped.
package driver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// DefaultTimeout is the request timeout when Load.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// ErrInvalid is wrapped by every error that Run and CheckTarget return for
// bad input (options, a non-loopback target); the CLI maps it to exit code 2.
var ErrInvalid = errors.New("invalid driver input")

// ErrUnreachable is wrapped by CheckTarget's error when nothing accepts
// connections at the target.
var ErrUnreachable = errors.New("target unreachable")

// Options configure one Run. Target, Plan and Load.Window are required.
type Options struct {
	// Target is the base URL; request paths are appended to its path. Only
	// http and https URLs on loopback addresses (127.0.0.0/8, ::1,
	// localhost) are accepted.
	Target *url.URL
	// Protocol is scenarios.ProtocolH1 ("" too), ProtocolH2 (https only)
	// or ProtocolH2C (http only); see docs/protocols.md.
	Protocol string
	// TLS configures the client of an https Target (nil: the system's
	// roots, the URL's host as server name).
	TLS  *scenarios.TLS
	Plan *scenarios.Plan
	// Load is the effective load (the caller applies flag overrides). A zero
	// Duration runs until ctx is cancelled; a zero Timeout means
	// DefaultTimeout. Warmup is not acted on here: warm-up windows are
	// ordinary windows, which analysis may leave out.
	Load scenarios.Load

	RunID       string
	Incarnation int
	// FirstIndex resumes a run: windows are numbered from it, the run covers
	// Load.Duration - FirstIndex*Load.Window, and ramp stages and the open
	// model's schedule continue from FirstIndex*Load.Window.
	FirstIndex int

	// Metrics receives live metrics (MetricRequests and the others); nil
	// means none.
	Metrics *metrics.Set
	// Logger gets a few lines per run (start, stop, first setup failures);
	// never one per request. Nil means silent.
	Logger *slog.Logger
	// Seed makes op picking reproducible; 0 picks a random seed.
	Seed uint64
	// Dialer opens the connections to Target's address; nil means a plain
	// net.Dialer. A netns.Namespace opens them inside a container's network
	// namespace, where Target is the container's own loopback. Connections
	// are kept alive, so it is called about once per VU, not per request.
	Dialer Dialer
}

// Dialer opens a TCP connection, as net.Dialer.DialContext does. address
// is the target URL's loopback IP and port; ctx carries the request's
// deadline. The connection should be a *net.TCPConn (or another
// syscall.Conn) for the driver's raw socket I/O; any other net.Conn works
// through its own Read and Write.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// DialerFunc adapts a function to Dialer.
type DialerFunc func(ctx context.Context, network, address string) (net.Conn, error)

// DialContext calls f.
func (f DialerFunc) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return f(ctx, network, address)
}

var (
	_ Dialer = (*net.Dialer)(nil)
	_ Dialer = DialerFunc(nil)
)

// Result describes a finished Run.
type Result struct {
	// Windows is the number of windows the sink accepted; NextIndex is
	// FirstIndex+Windows, where a resumed run continues.
	Windows   int
	NextIndex int
	// Stopped is set when the run ended before Load.Duration: the context
	// was cancelled or the sink failed.
	Stopped bool
	// Start and End bound the run; End includes the wait for in-flight requests.
	Start, End time.Time
}

// Run drives opts.Plan at opts.Target and calls sink with each window, in
// index order, from one goroutine that the VUs never wait for. It returns
// when the load is over (Load.Duration reached or ctx cancelled) and every
// window has been handed to sink. A sink error stops the run and is
// returned. Bad options give an error wrapping ErrInvalid before any load is
// sent; failures of the target are measured, not returned.
func Run(ctx context.Context, opts Options, sink func(window.Window) error) (Result, error) {
	r, err := newRun(ctx, opts)
	if err != nil {
		return Result{}, err
	}
	return r.run(ctx, sink)
}

// CheckTarget validates target like Run does and opens (then closes) one TCP
// connection to it, so that a target that is not up is one clear error
// wrapping ErrUnreachable. It waits at most 2 s or until ctx is done.
func CheckTarget(ctx context.Context, target *url.URL) error {
	ep, err := newEndpoint(ctx, target)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := ep.dialer.DialContext(ctx, "tcp", ep.addr)
	if err != nil {
		return fmt.Errorf("%w: %s: %v", ErrUnreachable, target.Redacted(), shortNetError(err))
	}
	return c.Close()
}

func shortNetError(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

type invalidError struct{ msg string }

func (e *invalidError) Error() string        { return e.msg }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{msg: fmt.Sprintf(format, args...)}
}

// newEndpoint checks that u is a loopback http URL and prepares what every
// connection needs.
func newEndpoint(ctx context.Context, u *url.URL) (*endpoint, error) {
	if u == nil {
		return nil, invalidf("no target URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, invalidf("target %s: only http:// and https:// targets are supported", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, invalidf("target %s: the base URL must not have a query or fragment", u.Redacted())
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return nil, invalidf("target %s has no host", u.Redacted())
	}
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	var ip net.IP
	if strings.EqualFold(host, "localhost") {
		addrs, err := net.DefaultResolver.LookupIPAddr(ctx, host)
		if err != nil || len(addrs) == 0 {
			return nil, invalidf("target %s: cannot resolve localhost: %v", u.Redacted(), err)
		}
		for _, a := range addrs {
			if !a.IP.IsLoopback() {
				return nil, invalidf("target %s: localhost resolves to %s, which is not a loopback address", u.Redacted(), a.IP)
			}
			if ip == nil || a.IP.To4() != nil && ip.To4() == nil {
				ip = a.IP // prefer IPv4
			}
		}
	} else if ip = net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, invalidf("target %s is not a loopback address: load is only sent to 127.0.0.0/8, ::1 or localhost", u.Redacted())
	}
	ep := &endpoint{addr: net.JoinHostPort(ip.String(), port), url: u}
	hostHeader := u.Host
	ep.host = []byte("Host: " + hostHeader + "\r\n")
	if p := u.EscapedPath(); p != "/" {
		for len(p) > 0 && p[len(p)-1] == '/' {
			p = p[:len(p)-1]
		}
		ep.basePath = []byte(p)
	}
	return ep, nil
}

// run is the state of one Run.
type run struct {
	opts         Options
	plan         *scenarios.Plan
	ep           *endpoint
	log          *slog.Logger
	live         *liveMetrics
	rec          *recorder
	picker       *picker
	open         bool
	ramp         ramp
	timeout      time.Duration
	window       time.Duration
	base         time.Duration // FirstIndex * window
	length       time.Duration // how long this incarnation drives; 0 = until cancelled
	numVUs       int
	setupAt      int // slot of the first setup step; ops are slots [0, len(Ops))
	seed         uint64
	warned       []atomic.Bool // per setup step: failure already logged
	renderWarned atomic.Bool

	start    time.Time
	stopping chan struct{}
	stopped  atomic.Bool

	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	busy        atomic.Int64 // open model: VUs in an iteration
	dropped     atomic.Int64
	active      atomic.Int64 // closed model: VUs allowed to run
	gateMu      sync.Mutex
	gate        chan struct{} // closed and replaced when active changes

	wsSlots []wsSlots // by op slot; nil without websocket ops (websocket.go)
	ws      *wsStats
}

func newRun(ctx context.Context, opts Options) (*run, error) {
	if opts.Plan == nil {
		return nil, invalidf("no scenario plan")
	}
	if len(opts.Plan.Ops) == 0 {
		return nil, invalidf("scenario %q has no ops", opts.Plan.Name)
	}
	l := opts.Load
	switch {
	case l.Window.D() <= 0:
		return nil, invalidf("window must be positive, got %s", l.Window.D())
	case l.Duration.D() < 0:
		return nil, invalidf("duration must not be negative, got %s", l.Duration.D())
	case l.Timeout.D() < 0:
		return nil, invalidf("timeout must not be negative, got %s", l.Timeout.D())
	case opts.FirstIndex < 0:
		return nil, invalidf("first window index must not be negative, got %d", opts.FirstIndex)
	case l.VUs < 0 || l.Rate < 0 || l.MaxVUs < 0:
		return nil, invalidf("vus, rate and max_vus must not be negative")
	case l.Open() && l.MaxVUs < 1:
		return nil, invalidf("the open model (rate) needs max_vus ≥ 1")
	case l.Open() && l.VUs > 0:
		return nil, invalidf("set either vus (closed model) or rate and max_vus (open model), not both")
	}
	for i, st := range l.Stages {
		if st.Target < 0 || math.IsNaN(st.Target) || math.IsInf(st.Target, 0) || st.Duration.D() < 0 {
			return nil, invalidf("stage %d: target must be ≥ 0 and duration ≥ 0", i+1)
		}
	}
	ep, err := newEndpoint(ctx, opts.Target)
	if err != nil {
		return nil, err
	}
	ep.custom = opts.Dialer
	if err := ep.setProtocol(opts.Protocol, opts.TLS); err != nil {
		return nil, err
	}
	pk, err := opPicker(opts.Plan)
	if err != nil {
		return nil, invalidf("scenario %q: %v", opts.Plan.Name, err)
	}

	r := &run{
		opts:     opts,
		plan:     opts.Plan,
		ep:       ep,
		log:      opts.Logger,
		picker:   pk,
		open:     l.Open(),
		timeout:  l.Timeout.D(),
		window:   l.Window.D(),
		base:     time.Duration(opts.FirstIndex) * l.Window.D(),
		seed:     opts.Seed,
		stopping: make(chan struct{}),
		gate:     make(chan struct{}),
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.timeout == 0 {
		r.timeout = DefaultTimeout
	}
	if r.seed == 0 {
		r.seed = rand.Uint64()
	}
	if d := l.Duration.D(); d > 0 {
		r.length = d - r.base
	}
	if r.open {
		r.ramp = newRamp(l.Rate, l.Stages)
		r.numVUs = l.MaxVUs
	} else {
		r.ramp = newRamp(float64(l.VUs), l.Stages)
		r.numVUs = int(math.Round(r.ramp.max()))
		if r.numVUs < 1 {
			return nil, invalidf("the closed model needs vus ≥ 1 (or a stage with a target ≥ 1)")
		}
	}

	names := make([]string, 0, len(opts.Plan.Ops)+len(opts.Plan.Setup))
	for _, a := range opts.Plan.Ops {
		names = append(names, a.Name)
	}
	r.setupAt = len(names)
	for _, a := range opts.Plan.Setup {
		names = append(names, a.Name)
	}
	names = r.addWebSocketSlots(names)
	r.warned = make([]atomic.Bool, len(opts.Plan.Setup))
	shards := 2 * runtime.GOMAXPROCS(0)
	if shards < 4 {
		shards = 4
	}
	if shards > r.numVUs {
		shards = r.numVUs
	}
	r.rec = newRecorder(names, shards)
	if opts.Metrics != nil {
		r.live = newLiveMetrics(opts.Metrics, names)
	}
	return r, nil
}

// stop asks every VU to finish; it is idempotent.
func (r *run) stop() {
	if r.stopped.CompareAndSwap(false, true) {
		close(r.stopping)
	}
}

func (r *run) isStopping() bool { return r.stopped.Load() }

// setActive sets the number of closed-model VUs allowed to run.
func (r *run) setActive(n int64) {
	if n > int64(r.numVUs) {
		n = int64(r.numVUs)
	}
	if r.active.Swap(n) == n {
		return
	}
	r.gateMu.Lock()
	close(r.gate)
	r.gate = make(chan struct{})
	r.gateMu.Unlock()
}

func (r *run) gateChan() chan struct{} {
	r.gateMu.Lock()
	defer r.gateMu.Unlock()
	return r.gate
}

func (r *run) run(ctx context.Context, sink func(window.Window) error) (Result, error) {
	res := Result{NextIndex: r.opts.FirstIndex}
	if r.opts.Load.Duration.D() > 0 && r.length <= 0 {
		now := time.Now()
		res.Start, res.End = now, now
		return res, nil // resumed after the end: nothing left to drive
	}
	q := newWindowQueue()
	sinkDone := make(chan struct{})
	var sinkErr error
	var sunk int
	sinkFailed := make(chan struct{})
	go func() {
		defer close(sinkDone)
		for {
			w, ok := q.pop()
			if !ok {
				return
			}
			if err := sink(w); err != nil {
				sinkErr = fmt.Errorf("window %d: sink: %w", w.Index, err)
				close(sinkFailed)
				q.discardAll()
				return
			}
			sunk++
		}
	}()

	r.start = time.Now()
	res.Start = r.start
	r.log.Info("driving", "target", r.opts.Target.Redacted(), "scenario", r.plan.Name,
		"model", r.model(), "vus", r.numVUs, "window", r.window, "first_index", r.opts.FirstIndex,
		"duration", r.length)

	var wg sync.WaitGroup
	vus := make([]*vu, r.numVUs)
	for i := range vus {
		vus[i] = r.newVU(i)
	}
	var schedDone chan struct{}
	if r.open {
		jobs := make(chan time.Time)
		for _, v := range vus {
			wg.Add(1)
			go v.runOpen(&wg, jobs)
		}
		schedDone = make(chan struct{})
		go func() {
			defer close(schedDone)
			r.schedule(jobs)
		}()
	} else {
		r.setActive(int64(math.Round(r.ramp.at(r.base))))
		for _, v := range vus {
			wg.Add(1)
			go v.runClosed(&wg)
		}
		schedDone = make(chan struct{})
		go func() {
			defer close(schedDone)
			r.rampVUs()
		}()
	}

	// Close windows at their aligned boundaries until the run ends.
	idx := r.opts.FirstIndex
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		offset := time.Duration(idx-r.opts.FirstIndex+1) * r.window
		last := r.length > 0 && offset >= r.length
		until := offset
		if last {
			until = r.length
		}
		timer.Reset(time.Until(r.start.Add(until)))
		select {
		case <-timer.C:
		case <-ctx.Done():
			res.Stopped = true
		case <-sinkFailed:
			res.Stopped = true
		}
		if res.Stopped || last {
			break
		}
		q.push(r.close(idx, r.start.Add(offset-r.window), r.start.Add(offset)))
		idx++
	}

	// Stop: no new requests; those in flight finish or time out (their
	// deadlines are at most Load.Timeout away), then the final window.
	r.stop()
	<-schedDone
	wg.Wait()
	for _, v := range vus {
		v.conn.close()
	}
	end := time.Now()
	from := r.start.Add(time.Duration(idx-r.opts.FirstIndex) * r.window)
	final := r.close(idx, from, end)
	// A window that ends before its nominal length (a stop, or a duration
	// that is not a whole number of windows) is partial; the drain of the
	// requests in flight makes a full last window slightly longer, never
	// shorter.
	final.Partial = res.Stopped || r.length <= 0 || r.start.Add(r.length).Before(from.Add(r.window))
	q.push(final)
	q.finish()
	<-sinkDone
	res.End = end
	res.Windows = sunk
	res.NextIndex = r.opts.FirstIndex + sunk
	r.log.Info("stopped", "windows", sunk, "early", res.Stopped, "elapsed", end.Sub(r.start).Round(time.Millisecond))
	return res, sinkErr
}

func (r *run) model() string {
	if r.open {
		return "open"
	}
	return "closed"
}

// close collects window idx covering [start, end).
func (r *run) close(idx int, start, end time.Time) window.Window {
	w := window.Window{
		RunID:       r.opts.RunID,
		Incarnation: r.opts.Incarnation,
		Index:       idx,
		Start:       start,
		End:         end,
	}
	if err := r.rec.collect(&w); err != nil {
		// Encoding an in-memory histogram does not fail in practice; keep
		// the counts and say what is missing rather than lose the window.
		r.log.Error("window histogram not encoded", "index", idx, "err", err)
	}
	r.collectProtocols(&w)
	w.Dropped = r.dropped.Swap(0)
	w.InFlight = int(r.maxInFlight.Swap(r.inFlight.Load()))
	if secs := end.Sub(start).Seconds(); secs > 0 {
		w.RPS = float64(w.Reached()) / secs
		for name, o := range w.Ops {
			o.RPS = float64(o.Requests) / secs
			w.Ops[name] = o
		}
	}
	at := r.base + end.Sub(r.start)
	w.Target = r.ramp.at(at)
	if r.open {
		w.VUs = int(r.busy.Load())
		w.MaxVUs = r.numVUs
	} else {
		// What the ramp allows at the window's end (the active count a
		// collector running late would read may already be the next one's).
		w.VUs = min(int(math.Round(w.Target)), r.numVUs)
	}
	r.log.Debug("window", "index", idx, "requests", w.Requests, "errors", w.Errors.Total(), "connect_failures", w.ConnectFailures, "dropped", w.Dropped, "rps", w.RPS)
	return w
}

// rampVUs moves the closed model's active VU count along the stages.
func (r *run) rampVUs() {
	static := r.ramp.staticAfter()
	if r.base >= static {
		return
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-r.stopping:
			return
		case <-t.C:
		}
		at := r.base + time.Since(r.start)
		r.setActive(int64(math.Round(r.ramp.at(at))))
		if at >= static {
			return
		}
	}
}

// schedule starts open-model iterations at their intended times: each goes
// to an idle VU, or is dropped when every VU is busy.
func (r *run) schedule(jobs chan<- time.Time) {
	arr := newArrivals(r.ramp, r.ramp.count(r.base))
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if r.isStopping() {
			return
		}
		off, ok := arr.next()
		if !ok || (r.length > 0 && off-r.base >= r.length) {
			<-r.stopping
			return
		}
		due := r.start.Add(off - r.base)
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-r.stopping:
				return
			}
		}
		select {
		case jobs <- due:
		default:
			r.dropped.Add(1)
			if r.live != nil {
				r.live.dropped.Inc()
			}
		}
	}
}

// windowQueue hands windows from the collector to the sink goroutine without
// ever blocking the collector.
type windowQueue struct {
	mu      sync.Mutex
	items   []window.Window
	done    bool
	discard bool
	ready   chan struct{}
}

func newWindowQueue() *windowQueue { return &windowQueue{ready: make(chan struct{}, 1)} }

func (q *windowQueue) push(w window.Window) {
	q.mu.Lock()
	if !q.discard {
		q.items = append(q.items, w)
	}
	q.mu.Unlock()
	q.signal()
}

func (q *windowQueue) signal() {
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

func (q *windowQueue) finish() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	q.signal()
}

// pop blocks until a window is available; false means no more will come.
func (q *windowQueue) pop() (window.Window, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			w := q.items[0]
			q.items[0] = window.Window{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return w, true
		}
		done := q.done
		q.mu.Unlock()
		if done {
			return window.Window{}, false
		}
		<-q.ready
	}
}

// discardAll drops queued windows and any pushed later (the sink has failed).
func (q *windowQueue) discardAll() {
	q.mu.Lock()
	q.discard = true
	q.items = nil
	q.mu.Unlock()
}
