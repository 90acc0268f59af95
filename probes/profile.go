package probes

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/pprof/profile"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// Profile kinds a Profiler takes (as store.ProfileKind spells them).
const (
	ProfileKindCPU  = "cpu"
	ProfileKindHeap = "heap"
)

// ProbeProfile names the profiler in logs.
const ProbeProfile = "profile"

// maxProfileBytes bounds a profile read from the target.
const maxProfileBytes = 64 << 20

// TakenProfile is one profile of the target in pprof format (gzipped
// profile.proto), ready to store.
type TakenProfile struct {
	Kind string // ProfileKindCPU or ProfileKindHeap
	// Index is the window the profile was taken in: a CPU profile starts
	// when the window before it closes; a heap profile is taken when its
	// window closes.
	Index    int
	Start    time.Time
	Duration time.Duration // a CPU profile's length; 0 for heap
	// Requests is how many requests were served while a CPU profile
	// sampled: each window's count pro rata over its overlap with the
	// profile (exact when the profile covers whole windows).
	Requests float64
	Data     []byte
}

// ProfilerConfig says where to take profiles.
type ProfilerConfig struct {
	// Spec is the scenario's probes.profile, defaults filled in
	// (scenarios.Parse does).
	Spec scenarios.Profile
	// TargetURL is the target's base URL, for a Go target's pprof endpoint.
	TargetURL string
	// InspectorAddr is a Node.js target's inspector (host:port, a loopback
	// address), for Spec.Inspector.
	InspectorAddr string
	// Dial opens connections to the target (nil: a plain dialer).
	Dial DialFunc
	// Logger receives a line when taking a profile fails (then at most one
	// reminder per ReminderInterval); nil means slog.Default().
	Logger *slog.Logger
}

// Profiler takes CPU profiles of Spec.Seconds every Spec.Every windows and
// heap profiles every Spec.HeapEvery windows, in goroutines of its own:
// Window only starts them and hands over those that are done, so neither
// the driver nor the window's commit waits for a profile. It is driven from
// one goroutine (the one that closes windows).
//
// Go targets are read from net/http/pprof: /profile?seconds=N (the CPU
// profile, taken by the target's runtime at 100 Hz) and /heap?gc=1 (the
// live heap after a forced GC, whose inuse_space names the allocation sites
// of what is retained). Node.js targets are read through their inspector
// (inspectorProfiles): the V8 CPU profiler and the sampling heap profiler,
// converted to pprof format.
type Profiler struct {
	spec scenarios.Profile
	src  profileSource
	log  *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	heapWG sync.WaitGroup // heap profiles under way

	mu       sync.Mutex
	pending  []*pendingProfile // CPU profiles under way or waiting for their windows' counts
	done     []TakenProfile    // heap profiles taken
	lastLog  time.Time
	fails    int
	last     int // the last window seen
	lastHeap int // the window of the last heap profile started; -1 none
	seen     bool
}

type pendingProfile struct {
	TakenProfile
	end      time.Time
	fetched  bool
	err      error
	coveredT time.Time // the end of the last window counted into Requests
}

// profileSource takes a target's profiles in pprof format (gzipped
// profile.proto).
type profileSource interface {
	// cpu takes a CPU profile of length d.
	cpu(ctx context.Context, d time.Duration) ([]byte, error)
	// heap takes a heap profile (inuse_space) after a forced GC.
	heap(ctx context.Context) ([]byte, error)
	close()
}

// NewProfiler checks cfg; it contacts nothing.
func NewProfiler(cfg ProfilerConfig) (*Profiler, error) {
	sp := cfg.Spec
	if sp.Seconds < 1 || sp.Every < 1 || sp.HeapEvery < 1 {
		return nil, fmt.Errorf("%w: probes.profile: seconds, every and heap_every must be ≥ 1 (got %d, %d, %d)", ErrBadConfig, sp.Seconds, sp.Every, sp.HeapEvery)
	}
	p := &Profiler{spec: sp, log: cfg.Logger}
	switch {
	case sp.Inspector && sp.Pprof != "":
		return nil, fmt.Errorf("%w: probes.profile takes pprof or inspector, not both", ErrBadConfig)
	case sp.Inspector:
		host, _, err := net.SplitHostPort(cfg.InspectorAddr)
		if err != nil {
			return nil, fmt.Errorf("%w: probes.profile.inspector: address %q: %v", ErrBadConfig, cfg.InspectorAddr, err)
		}
		if !isLoopback(host) {
			// The inspector can run any code in the target.
			return nil, fmt.Errorf("%w: probes.profile.inspector: %s is not a loopback address", ErrBadConfig, host)
		}
		c := NewInspectorClient(cfg.InspectorAddr)
		c.http, c.readLimit = newHTTPClient(cfg.Dial), maxInspectorProfileBytes
		p.src = &inspectorProfiles{c: c}
	case sp.Pprof == "":
		return nil, fmt.Errorf("%w: probes.profile needs pprof, the path of the target's net/http/pprof (e.g. /debug/pprof), or inspector", ErrBadConfig)
	case cfg.TargetURL == "":
		return nil, fmt.Errorf("%w: probes.profile needs the target's URL", ErrBadConfig)
	default:
		p.src = &pprofEndpoint{
			base:   strings.TrimSuffix(cfg.TargetURL, "/") + "/" + strings.Trim(sp.Pprof, "/"),
			client: newHTTPClient(cfg.Dial),
		}
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.lastHeap = -1
	return p, nil
}

// Window is called when window w closes (w has its request count). It
// starts the profiles due after w and returns those finished, in the order
// they were started. A CPU profile is returned once the windows that cover
// its span have closed, so that its Requests are known.
func (p *Profiler) Window(w window.Window) []TakenProfile {
	if w.Gap {
		return nil
	}
	p.mu.Lock()
	p.last, p.seen = w.Index, true
	// Count w's requests into the profiles it overlaps.
	for _, pp := range p.pending {
		pp.count(w)
	}
	var out []TakenProfile
	keep := p.pending[:0]
	for _, pp := range p.pending {
		switch {
		case !pp.fetched || pp.coveredT.Before(pp.end):
			keep = append(keep, pp)
		case pp.err != nil:
			p.failed(pp.err)
		default:
			out = append(out, pp.TakenProfile)
		}
	}
	p.pending = keep
	out = append(out, p.done...)
	p.done = nil
	busy := len(p.pending) > 0
	p.mu.Unlock()

	next := w.Index + 1
	if next%p.spec.HeapEvery == 0 {
		p.startHeap(w.Index)
	}
	// One CPU profile at a time: a target's runtime refuses a second.
	if next%p.spec.Every == 0 && !busy {
		p.startCPU(next)
	}
	return out
}

// count adds w's share of requests to the profile.
func (pp *pendingProfile) count(w window.Window) {
	from, to := maxTime(w.Start, pp.Start), minTime(w.End, pp.end)
	if span := w.End.Sub(w.Start); to.After(from) && span > 0 {
		pp.Requests += float64(w.Requests) * float64(to.Sub(from)) / float64(span)
	}
	if w.End.After(pp.coveredT) {
		pp.coveredT = w.End
	}
}

func (p *Profiler) startCPU(index int) {
	secs := p.spec.Seconds
	pp := &pendingProfile{TakenProfile: TakenProfile{Kind: ProfileKindCPU, Index: index, Start: time.Now(), Duration: time.Duration(secs) * time.Second}}
	pp.end = pp.Start.Add(pp.Duration)
	pp.coveredT = pp.Start
	p.mu.Lock()
	p.pending = append(p.pending, pp)
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		ctx, cancel := context.WithTimeout(p.ctx, pp.Duration+30*time.Second)
		defer cancel()
		data, err := p.src.cpu(ctx, pp.Duration)
		p.mu.Lock()
		pp.Data, pp.err, pp.fetched = data, err, true
		p.mu.Unlock()
	}()
}

func (p *Profiler) startHeap(index int) {
	p.mu.Lock()
	p.lastHeap = index
	p.mu.Unlock()
	p.heapWG.Add(1)
	go func() {
		defer p.heapWG.Done()
		ctx, cancel := context.WithTimeout(p.ctx, 30*time.Second)
		defer cancel()
		start := time.Now()
		data, err := p.src.heap(ctx)
		p.mu.Lock()
		defer p.mu.Unlock()
		if err != nil {
			p.failed(err)
			return
		}
		p.done = append(p.done, TakenProfile{Kind: ProfileKindHeap, Index: index, Start: start, Data: data})
	}()
}

// pprofEndpoint is a Go target's net/http/pprof at base.
type pprofEndpoint struct {
	base   string
	client *http.Client
}

func (e *pprofEndpoint) cpu(ctx context.Context, d time.Duration) ([]byte, error) {
	return e.fetch(ctx, fmt.Sprintf("%s/profile?seconds=%d", e.base, int(d/time.Second)))
}

func (e *pprofEndpoint) heap(ctx context.Context) ([]byte, error) {
	return e.fetch(ctx, e.base+"/heap?gc=1")
}

func (e *pprofEndpoint) close() { e.client.CloseIdleConnections() }

// fetch reads one profile and checks that it parses.
func (e *pprofEndpoint) fetch(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxProfileBytes))
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("profile %s: %s: %s", url, resp.Status, firstLine(body))
	}
	if _, err := profile.Parse(bytes.NewReader(body)); err != nil {
		return nil, fmt.Errorf("profile %s: not a pprof profile: %w", url, err)
	}
	return body, nil
}

// failed logs a failed profile: the first, then at most one a
// ReminderInterval. Called with p.mu held.
func (p *Profiler) failed(err error) {
	p.fails++
	if now := time.Now(); p.lastLog.IsZero() || now.Sub(p.lastLog) >= ReminderInterval {
		p.lastLog = now
		p.log.Warn("taking a profile of the target failed; the soak goes on without it", "probe", ProbeProfile, "failures", p.fails, "err", err)
	}
}

// Finish is called when the drive ends, after its last Window: it takes a
// heap profile of the end (unless the last window's is already taken),
// since a leak's evidence is the heap at the start and the end of its
// range, waits for the heap profiles under way and returns them. CPU
// profiles under way are dropped: their windows never closed.
func (p *Profiler) Finish() []TakenProfile {
	p.mu.Lock()
	due := p.seen && p.lastHeap != p.last
	last := p.last
	p.mu.Unlock()
	if due {
		p.startHeap(last)
	}
	p.heapWG.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.done
	p.done = nil
	return out
}

// Close stops the profiles under way and waits for their goroutines.
func (p *Profiler) Close() error {
	p.cancel()
	p.wg.Wait()
	p.heapWG.Wait()
	p.src.close()
	return nil
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
