package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"runtime"
	runtimemetrics "runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/VictoriaMetrics/metrics"
	"golang.org/x/crypto/bcrypt"
)

// bcryptCost is bcrypt.MinCost (4, ~1 ms a hash) instead of DefaultCost (10,
// ~60 ms): sign-ups and logins are part of every soak's mix, and at cost 10 a
// few logins a second would eat a core of this 2-core machine, so password
// hashing rather than the API and its database would shape the results.
// A production service would keep the default.
const bcryptCost = bcrypt.MinCost

const (
	maxBodyBytes     = 1 << 20
	defaultListLimit = 20
	maxListLimit     = 100
	maxBatchItems    = 100
	maxUsernameBytes = 64
)

// serverOptions configures newServer.
type serverOptions struct {
	// LeakBytes, when > 0, makes every request retain that many bytes forever
	// (the DEMO_LEAK_BYTES switch).
	LeakBytes int
	// Leak receives the retained allocations; nil means the process-wide retained.
	Leak *leakedMemory
	// CPUBurnUs, when > 0, makes every request burn that much CPU (the
	// DEMO_CPU_BURN_US switch).
	CPUBurnUs int
	// AllocBytes, when > 0, makes every request allocate that many bytes
	// and drop them (the DEMO_ALLOC_BYTES switch).
	AllocBytes int
	// DBSleep, when > 0, makes every API request hold a pooled database
	// connection that long first (the DEMO_DB_SLEEP_MS switch); the store
	// must be a dbSleeper.
	DBSleep time.Duration
	// Variant 1 adds "cursor":null to GET /items (DEMO_RESPONSE_VARIANT).
	Variant int
	// WebSocket configures the WebSocket endpoints (DEMO_WS_* switches).
	WebSocket wsOptions
	Log       *slog.Logger
}

// server is the demo target's HTTP API. Its handler is safe for concurrent use.
type server struct {
	st      store
	log     *slog.Logger
	mux     *http.ServeMux
	metrics *metrics.Set
	heap    liveHeap

	leakBytes  int
	leak       *leakedMemory
	burner     cpuBurner
	allocBytes int
	dbSleep    time.Duration
	variant    int

	ws *wsServer // WebSocket endpoints (websocket.go)

	errLog sampledLog
	bufs   sync.Pool // *[]byte response buffers
	lists  sync.Pool // *[]item list buffers
}

func newServer(st store, o serverOptions) *server {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Leak == nil {
		o.Leak = &retained
	}
	s := &server{
		st:         st,
		log:        o.Log,
		mux:        http.NewServeMux(),
		metrics:    metrics.NewSet(),
		leakBytes:  o.LeakBytes,
		leak:       o.Leak,
		burner:     newCPUBurner(o.CPUBurnUs),
		allocBytes: o.AllocBytes,
		dbSleep:    o.DBSleep,
		variant:    o.Variant,
	}
	s.errLog.log = o.Log
	s.bufs.New = func() any { b := make([]byte, 0, 4096); return &b }
	s.lists.New = func() any { l := make([]item, 0, defaultListLimit); return &l }
	s.metrics.NewGauge(`go_gc_heap_live_bytes`, func() float64 { return float64(s.heap.bytes()) })
	s.metrics.NewGauge(`demo_leak_retained_bytes`, func() float64 { return float64(s.leak.total.Load()) })

	s.handle("POST /users", s.createUser)
	s.handle("POST /login", s.login)
	s.handle("GET /items", s.listItems)
	s.handle("POST /items", s.createItem)
	s.handle("POST /items/batch", s.createItems)
	s.handle("GET /items/{id}", s.getItem)
	s.handle("PUT /items/{id}", s.updateItem)
	s.handle("DELETE /items/{id}", s.deleteItem)
	s.handle("GET /health", s.health)
	s.handle("POST /debug/gc", s.forceGC)
	s.handle("GET /metrics", s.writeMetrics)
	s.registerWebSocket(o.WebSocket)
	// net/http/pprof, outside handle: profiling requests neither leak nor
	// burn, and are not counted as API requests.
	s.mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	s.mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	s.mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	return s
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handlerFunc handles a request and returns the status code it wrote, so the
// route wrapper can count it without wrapping the ResponseWriter.
type handlerFunc func(w http.ResponseWriter, r *http.Request) int

// routeStatuses are the codes whose counters are created up front; others are
// created on first use.
var routeStatuses = []int{200, 201, 204, 400, 401, 404, 409, 413, 500}

// handle registers h for pattern with its request counter per status code
// (http_requests_total{route,code}), latency histogram
// (http_request_duration_seconds{route}) and the leak switch.
func (s *server) handle(pattern string, h handlerFunc) {
	route := strconv.Quote(pattern)
	duration := s.metrics.NewHistogram(`http_request_duration_seconds{route=` + route + `}`)
	counters := make(map[int]*metrics.Counter, len(routeStatuses))
	for _, code := range routeStatuses {
		counters[code] = s.metrics.NewCounter(fmt.Sprintf(`http_requests_total{route=%s,code="%d"}`, route, code))
	}
	sleeps := s.dbSleep > 0 && !strings.HasPrefix(pattern, "GET /health") && !strings.HasPrefix(pattern, "GET /metrics") && !strings.HasPrefix(pattern, "POST /debug/")
	s.mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		s.leak.retain(s.leakBytes)
		s.burner.burn()
		allocGarbage(s.allocBytes)
		var code int
		if sleeps {
			if err := s.st.(dbSleeper).sleep(r.Context(), s.dbSleep); err != nil {
				code = s.internalError(w, r, err)
			}
		}
		if code == 0 {
			code = h(w, r)
		}
		duration.UpdateDuration(start)
		if c, ok := counters[code]; ok {
			c.Inc()
		} else {
			s.metrics.GetOrCreateCounter(fmt.Sprintf(`http_requests_total{route=%s,code="%d"}`, route, code)).Inc()
		}
	})
}

// --- responses ---

func (s *server) writeBody(w http.ResponseWriter, code int, body []byte) int {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(code)
	w.Write(body)
	return code
}

// writeAppended renders a response with appendFn into a pooled buffer.
func (s *server) writeAppended(w http.ResponseWriter, code int, appendFn func([]byte) []byte) int {
	bp := s.bufs.Get().(*[]byte)
	*bp = appendFn((*bp)[:0])
	s.writeBody(w, code, *bp)
	if cap(*bp) <= 1<<20 { // do not keep a huge buffer pinned in the pool
		s.bufs.Put(bp)
	}
	return code
}

func (s *server) writeError(w http.ResponseWriter, code int, msg string) int {
	return s.writeAppended(w, code, func(b []byte) []byte {
		b = append(b, `{"error":`...)
		b = appendJSONString(b, msg)
		return append(b, '}')
	})
}

// internalError answers 500 and logs err, at most once a second (a failing
// database under load must not turn into a log line per request).
func (s *server) internalError(w http.ResponseWriter, r *http.Request, err error) int {
	s.errLog.error("request failed", "route", r.Pattern, "err", err)
	return s.writeError(w, http.StatusInternalServerError, "internal error")
}

// decodeBody decodes a JSON request body into v; it answers 400 (or 413) itself
// and returns false when the body is not acceptable.
func (s *server) decodeBody(w http.ResponseWriter, r *http.Request, v any) (int, bool) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return s.writeError(w, http.StatusRequestEntityTooLarge, "body larger than 1 MiB"), false
		}
		if errors.Is(err, io.EOF) {
			return s.writeError(w, http.StatusBadRequest, "empty body: expected a JSON object"), false
		}
		return s.writeError(w, http.StatusBadRequest, "bad JSON: "+err.Error()), false
	}
	return 0, true
}

// --- auth ---

var errBadAuth = errors.New("bad authorization")

// sessionUser resolves the request's "Authorization: Bearer <token>" header.
// ok is false when no header was sent; err is errBadAuth for a malformed header
// or an unknown token.
func (s *server) sessionUser(r *http.Request) (userID int64, ok bool, err error) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return 0, false, nil
	}
	token, found := strings.CutPrefix(h, "Bearer ")
	if !found || token == "" {
		return 0, true, errBadAuth
	}
	id, err := s.st.sessionUser(r.Context(), token)
	if errors.Is(err, errNotFound) {
		return 0, true, errBadAuth
	}
	return id, true, err
}

// requireUser answers 401 (or 500) itself and returns ok=false when the
// request carries no valid session.
func (s *server) requireUser(w http.ResponseWriter, r *http.Request) (userID int64, code int, ok bool) {
	id, present, err := s.sessionUser(r)
	switch {
	case errors.Is(err, errBadAuth):
		return 0, s.writeError(w, http.StatusUnauthorized, "invalid session token"), false
	case err != nil:
		return 0, s.internalError(w, r, err), false
	case !present:
		return 0, s.writeError(w, http.StatusUnauthorized, "missing Authorization: Bearer <token>"), false
	}
	return id, 0, true
}

// checkOptionalUser validates a session token on a public read, if one is sent.
func (s *server) checkOptionalUser(w http.ResponseWriter, r *http.Request) (code int, ok bool) {
	_, _, err := s.sessionUser(r)
	switch {
	case errors.Is(err, errBadAuth):
		return s.writeError(w, http.StatusUnauthorized, "invalid session token"), false
	case err != nil:
		return s.internalError(w, r, err), false
	}
	return 0, true
}

// now is the timestamp for a write, at the microsecond precision both stores keep.
func now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// --- users and sessions ---

type credentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

func (s *server) createUser(w http.ResponseWriter, r *http.Request) int {
	var c credentials
	if code, ok := s.decodeBody(w, r, &c); !ok {
		return code
	}
	switch {
	case c.Username == "" || len(c.Username) > maxUsernameBytes:
		return s.writeError(w, http.StatusBadRequest, "username must be 1 to 64 bytes")
	case c.Password == "" || len(c.Password) > 72:
		return s.writeError(w, http.StatusBadRequest, "password must be 1 to 72 bytes")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(c.Password), bcryptCost)
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("hash password: %w", err))
	}
	id, err := s.st.createUser(r.Context(), c.Username, hash, now())
	if errors.Is(err, errTaken) {
		return s.writeError(w, http.StatusConflict, "username taken")
	}
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("create user: %w", err))
	}
	return s.writeAppended(w, http.StatusCreated, func(b []byte) []byte {
		b = append(b, `{"id":`...)
		b = strconv.AppendInt(b, id, 10)
		b = append(b, `,"username":`...)
		b = appendJSONString(b, c.Username)
		return append(b, '}')
	})
}

func (s *server) login(w http.ResponseWriter, r *http.Request) int {
	var c credentials
	if code, ok := s.decodeBody(w, r, &c); !ok {
		return code
	}
	id, hash, err := s.st.userByName(r.Context(), c.Username)
	if errors.Is(err, errNotFound) {
		return s.writeError(w, http.StatusUnauthorized, "bad username or password")
	}
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("find user: %w", err))
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(c.Password)) != nil {
		return s.writeError(w, http.StatusUnauthorized, "bad username or password")
	}
	var raw [24]byte
	rand.Read(raw[:]) // never returns an error (crypto/rand, Go 1.24+)
	token := "s_" + hex.EncodeToString(raw[:])
	if err := s.st.createSession(r.Context(), token, id, now()); err != nil {
		return s.internalError(w, r, fmt.Errorf("create session: %w", err))
	}
	return s.writeAppended(w, http.StatusOK, func(b []byte) []byte {
		b = append(b, `{"token":"`...)
		b = append(b, token...)
		b = append(b, `","user_id":`...)
		b = strconv.AppendInt(b, id, 10)
		return append(b, '}')
	})
}

// --- items ---

// itemInput is the body of POST /items and of each element of POST /items/batch.
type itemInput struct {
	Bucket  int64           `json:"bucket"`
	Title   string          `json:"title"`
	Payload json.RawMessage `json:"payload"`
}

// payloadObject checks that raw (already valid JSON) is an object and returns
// it compacted; a missing or null payload is {}.
func payloadObject(raw json.RawMessage) ([]byte, bool) {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return []byte(`{}`), true
	}
	if t[0] != '{' {
		return nil, false
	}
	return compactJSON(raw), true
}

// compactJSON strips insignificant whitespace from valid JSON.
func compactJSON(raw []byte) []byte {
	out := make([]byte, 0, len(raw))
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case inString:
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		default:
			if c == '"' {
				inString = true
			}
			out = append(out, c)
		}
	}
	return out
}

func (in *itemInput) toNew() (newItem, bool) {
	p, ok := payloadObject(in.Payload)
	return newItem{Bucket: in.Bucket, Title: in.Title, Payload: p}, ok
}

func (s *server) createItem(w http.ResponseWriter, r *http.Request) int {
	owner, code, ok := s.requireUser(w, r)
	if !ok {
		return code
	}
	var in itemInput
	if code, ok := s.decodeBody(w, r, &in); !ok {
		return code
	}
	n, ok := in.toNew()
	if !ok {
		return s.writeError(w, http.StatusBadRequest, "payload must be a JSON object")
	}
	it, err := s.st.createItem(r.Context(), owner, n, now())
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("create item: %w", err))
	}
	return s.writeAppended(w, http.StatusCreated, func(b []byte) []byte { return appendItem(b, &it) })
}

func (s *server) createItems(w http.ResponseWriter, r *http.Request) int {
	owner, code, ok := s.requireUser(w, r)
	if !ok {
		return code
	}
	var body struct {
		Items []itemInput `json:"items"`
	}
	if code, ok := s.decodeBody(w, r, &body); !ok {
		return code
	}
	if len(body.Items) == 0 || len(body.Items) > maxBatchItems {
		return s.writeError(w, http.StatusBadRequest, "items must hold 1 to 100 items")
	}
	in := make([]newItem, len(body.Items))
	for i := range body.Items {
		if in[i], ok = body.Items[i].toNew(); !ok {
			return s.writeError(w, http.StatusBadRequest, fmt.Sprintf("items[%d].payload must be a JSON object", i))
		}
	}
	ids, err := s.st.createItems(r.Context(), owner, in, now())
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("create %d items: %w", len(in), err))
	}
	return s.writeAppended(w, http.StatusCreated, func(b []byte) []byte { return appendIDs(b, ids) })
}

// itemID parses the {id} path segment; it answers 404 itself when the segment
// cannot name an item.
func (s *server) itemID(w http.ResponseWriter, r *http.Request) (int64, int, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, s.writeError(w, http.StatusNotFound, "item not found"), false
	}
	return id, 0, true
}

func (s *server) getItem(w http.ResponseWriter, r *http.Request) int {
	if code, ok := s.checkOptionalUser(w, r); !ok {
		return code
	}
	id, code, ok := s.itemID(w, r)
	if !ok {
		return code
	}
	it, err := s.st.getItem(r.Context(), id)
	if errors.Is(err, errNotFound) {
		return s.writeError(w, http.StatusNotFound, "item not found")
	}
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("get item %d: %w", id, err))
	}
	return s.writeAppended(w, http.StatusOK, func(b []byte) []byte { return appendItem(b, &it) })
}

// updateItem applies a partial update: an absent title or payload is kept.
// Like Parse's default ACL, any session may change any item; owner records
// who created it.
func (s *server) updateItem(w http.ResponseWriter, r *http.Request) int {
	if _, code, ok := s.requireUser(w, r); !ok {
		return code
	}
	id, code, ok := s.itemID(w, r)
	if !ok {
		return code
	}
	var in struct {
		Title   *string         `json:"title"`
		Payload json.RawMessage `json:"payload"`
	}
	if code, ok := s.decodeBody(w, r, &in); !ok {
		return code
	}
	p := itemPatch{Title: in.Title}
	if len(in.Payload) > 0 && strings.TrimSpace(string(in.Payload)) != "null" {
		if p.Payload, ok = payloadObject(in.Payload); !ok {
			return s.writeError(w, http.StatusBadRequest, "payload must be a JSON object")
		}
	}
	it, err := s.st.updateItem(r.Context(), id, p, now())
	if errors.Is(err, errNotFound) {
		return s.writeError(w, http.StatusNotFound, "item not found")
	}
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("update item %d: %w", id, err))
	}
	return s.writeAppended(w, http.StatusOK, func(b []byte) []byte { return appendItem(b, &it) })
}

func (s *server) deleteItem(w http.ResponseWriter, r *http.Request) int {
	if _, code, ok := s.requireUser(w, r); !ok {
		return code
	}
	id, code, ok := s.itemID(w, r)
	if !ok {
		return code
	}
	err := s.st.deleteItem(r.Context(), id)
	if errors.Is(err, errNotFound) {
		return s.writeError(w, http.StatusNotFound, "item not found")
	}
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("delete item %d: %w", id, err))
	}
	w.WriteHeader(http.StatusNoContent)
	return http.StatusNoContent
}

// listItems serves GET /items?bucket=N&limit=L: newest first, limit 20 by
// default, at most 100.
func (s *server) listItems(w http.ResponseWriter, r *http.Request) int {
	if code, ok := s.checkOptionalUser(w, r); !ok {
		return code
	}
	q := r.URL.Query()
	var bucket int64
	hasBucket := false
	if v := q.Get("bucket"); v != "" {
		b, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s.writeError(w, http.StatusBadRequest, "bucket must be an integer")
		}
		bucket, hasBucket = b, true
	}
	limit := defaultListLimit
	if v := q.Get("limit"); v != "" {
		l, err := strconv.Atoi(v)
		if err != nil || l < 1 {
			return s.writeError(w, http.StatusBadRequest, "limit must be a positive integer")
		}
		limit = min(l, maxListLimit)
	}
	lp := s.lists.Get().(*[]item)
	defer func() {
		clear(*lp) // drop references to payloads and titles
		*lp = (*lp)[:0]
		s.lists.Put(lp)
	}()
	items, err := s.st.listItems(r.Context(), bucket, hasBucket, limit, (*lp)[:0])
	*lp = items
	if err != nil {
		return s.internalError(w, r, fmt.Errorf("list items: %w", err))
	}
	if s.variant == 1 {
		return s.writeAppended(w, http.StatusOK, func(b []byte) []byte {
			b = appendItems(b, items)
			return append(b[:len(b)-1], `,"cursor":null}`...)
		})
	}
	return s.writeAppended(w, http.StatusOK, func(b []byte) []byte { return appendItems(b, items) })
}

// --- operations ---

func (s *server) health(w http.ResponseWriter, r *http.Request) int {
	return s.writeBody(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

// forceGC runs a full garbage collection and answers {"heap_bytes": N}, the
// live heap it left (runtime/metrics /gc/heap/live:bytes).
func (s *server) forceGC(w http.ResponseWriter, r *http.Request) int {
	runtime.GC()
	n := s.heap.bytes()
	return s.writeAppended(w, http.StatusOK, func(b []byte) []byte {
		b = append(b, `{"heap_bytes":`...)
		b = strconv.AppendUint(b, n, 10)
		return append(b, '}')
	})
}

func (s *server) writeMetrics(w http.ResponseWriter, r *http.Request) int {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	s.metrics.WritePrometheus(w)
	metrics.WriteProcessMetrics(w)
	return http.StatusOK
}

// liveHeap reads the Go runtime's live heap after the last GC. Safe for
// concurrent use.
type liveHeap struct {
	mu     sync.Mutex
	sample [1]runtimemetrics.Sample
}

func (h *liveHeap) bytes() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sample[0].Name = "/gc/heap/live:bytes"
	runtimemetrics.Read(h.sample[:])
	if h.sample[0].Value.Kind() != runtimemetrics.KindUint64 {
		return 0
	}
	return h.sample[0].Value.Uint64()
}

// leakedMemory holds allocations that are never freed: the DEMO_LEAK_BYTES
// switch. The zero value is ready to use; safe for concurrent use.
type leakedMemory struct {
	mu    sync.Mutex
	kept  [][]byte
	total atomic.Int64
}

// retained is the process-wide leak the DEMO_LEAK_BYTES switch appends to.
var retained leakedMemory

// retain keeps n bytes forever. The bytes are written so the pages are
// resident (RSS grows too, not only the heap accounting).
func (l *leakedMemory) retain(n int) {
	if n <= 0 {
		return
	}
	b := make([]byte, n)
	for i := 0; i < n; i += 512 {
		b[i] = 1
	}
	l.mu.Lock()
	l.kept = append(l.kept, b)
	l.mu.Unlock()
	l.total.Add(int64(n))
}

// garbageSink is where allocGarbage publishes each allocation, so that the
// compiler can neither drop it nor keep it on the stack: a store to a
// package-level variable makes it escape, and the write loop makes it real.
// The previous allocation becomes garbage at the next store.
var garbageSink atomic.Pointer[[]byte]

// allocGarbage allocates n bytes on the heap and drops them: the
// DEMO_ALLOC_BYTES switch, a known allocation cost per request (bytes
// allocated per request, and GC cycles, grow with n; the live heap does not).
func allocGarbage(n int) {
	if n <= 0 {
		return
	}
	b := make([]byte, n)
	for i := 0; i < n; i += 512 {
		b[i] = 1
	}
	garbageSink.Store(&b)
}

// sampledLog logs at most one error a second and counts the ones it dropped.
type sampledLog struct {
	log        *slog.Logger
	lastNanos  atomic.Int64
	suppressed atomic.Int64
}

func (l *sampledLog) error(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := l.lastNanos.Load()
	if now-last < int64(time.Second) || !l.lastNanos.CompareAndSwap(last, now) {
		l.suppressed.Add(1)
		return
	}
	if n := l.suppressed.Swap(0); n > 0 {
		args = append(args, "suppressed_since_last", n)
	}
	l.log.Error(msg, args...)
}

// shutdownContext bounds a graceful shutdown.
func shutdownContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}
