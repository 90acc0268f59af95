// Package window holds the unit of every longhaul result: one fixed-length time
// window of a run, with its request counts, error classes, latency percentiles,
// the merged HDR histogram they came from, and the server-side probe readings taken
// when it closed.
//
// Recipe:
//
//  1. The driver records latencies into HDR histograms and, when a window closes,
//     fills a Window with Fill (percentiles from the merged histogram, the
//     histogram itself encoded with EncodeHistogram).
//  2. Probes add their fields (CPU, RSS, heap, database) to the same Window.
//  3. The store writes it; Merge turns any set of windows into a Summary by
//     merging their histograms — never by averaging percentiles.
//
// The package is a leaf: it imports no other longhaul package.
package window

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Class is the outcome class of one request.
type Class uint8

// Outcome classes. OK is a response whose status met the op's expectation.
const (
	OK          Class = iota
	Status4xx         // HTTP 4xx not listed in expect
	Status5xx         // HTTP 5xx not listed in expect
	Refused           // connection refused
	Reset             // connection reset / EOF mid-response
	Timeout           // request timeout hit
	Other             // anything else (DNS, TLS, malformed response, ...)
	Unexpected        // response arrived but expect (status or capture) was not met
	Interrupted       // in flight when the run stopped and not finished within the timeout
	NumClasses
)

var classNames = [NumClasses]string{"ok", "4xx", "5xx", "refused", "reset", "timeout", "other", "unexpected", "interrupted"}

// String returns the class name used in JSON, metrics and the store ("ok", "4xx", ...).
func (c Class) String() string {
	if c < NumClasses {
		return classNames[c]
	}
	return "invalid"
}

// UnwantedStatus classifies a response whose HTTP status the op did not
// expect: Status4xx or Status5xx by its hundred, Unexpected otherwise.
func UnwantedStatus(status int) Class {
	switch {
	case status >= 400 && status < 500:
		return Status4xx
	case status >= 500 && status < 600:
		return Status5xx
	}
	return Unexpected
}

// ParseClass is the inverse of Class.String.
func ParseClass(s string) (Class, bool) {
	for i, n := range classNames {
		if n == s {
			return Class(i), true
		}
	}
	return 0, false
}

// Errors counts requests by error class. The zero value is ready to use.
// It marshals as a JSON object keyed by class name ("4xx", "5xx", "refused", ...).
type Errors struct {
	Status4xx   int64 `json:"4xx"`
	Status5xx   int64 `json:"5xx"`
	Refused     int64 `json:"refused"`
	Reset       int64 `json:"reset"`
	Timeout     int64 `json:"timeout"`
	Other       int64 `json:"other"`
	Unexpected  int64 `json:"unexpected"`
	Interrupted int64 `json:"interrupted"`
}

// Add counts n requests of class c; OK is ignored.
func (e *Errors) Add(c Class, n int64) {
	switch c {
	case Status4xx:
		e.Status4xx += n
	case Status5xx:
		e.Status5xx += n
	case Refused:
		e.Refused += n
	case Reset:
		e.Reset += n
	case Timeout:
		e.Timeout += n
	case Other:
		e.Other += n
	case Unexpected:
		e.Unexpected += n
	case Interrupted:
		e.Interrupted += n
	}
}

// Get returns the count for class c (0 for OK).
func (e Errors) Get(c Class) int64 {
	switch c {
	case Status4xx:
		return e.Status4xx
	case Status5xx:
		return e.Status5xx
	case Refused:
		return e.Refused
	case Reset:
		return e.Reset
	case Timeout:
		return e.Timeout
	case Other:
		return e.Other
	case Unexpected:
		return e.Unexpected
	case Interrupted:
		return e.Interrupted
	}
	return 0
}

// Total is the number of failed requests over all classes.
func (e Errors) Total() int64 {
	return e.Status4xx + e.Status5xx + e.Refused + e.Reset + e.Timeout + e.Other + e.Unexpected + e.Interrupted
}

// AddAll adds every class of o to e.
func (e *Errors) AddAll(o Errors) {
	for c := Class(1); c < NumClasses; c++ {
		e.Add(c, o.Get(c))
	}
}

// String lists the nonzero classes of e as "5xx:3 timeout:1" (the window
// table's and the findings' wording), or "" when there are none.
func (e Errors) String() string {
	var b strings.Builder
	for c := Class(1); c < NumClasses; c++ {
		if n := e.Get(c); n != 0 {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s:%d", c, n)
		}
	}
	return b.String()
}

// Latency is a set of latency percentiles in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// OpStats are the figures of one operation (by name) in a window or summary.
//
// Requests counts every request that was sent and finished or was interrupted:
// Requests = OK + Errors.Total(). Skipped counts picks of this op that sent
// nothing because a pool it reads from was still empty.
type OpStats struct {
	Requests  int64   `json:"requests"`
	OK        int64   `json:"ok"`
	Errors    Errors  `json:"errors"`
	Skipped   int64   `json:"skipped"`
	RPS       float64 `json:"rps"`
	LatencyMs Latency `json:"latency_ms"`
	// Histogram is the op's HDR histogram (microseconds), encoded by EncodeHistogram.
	Histogram []byte `json:"-"`
}

// AddCounts adds x's request counts to o: requests, OK, errors and
// skipped. Latencies and RPS are not counts: they come from the merged
// histograms and the summed durations.
func (o *OpStats) AddCounts(x OpStats) {
	o.Requests += x.Requests
	o.OK += x.OK
	o.Errors.AddAll(x.Errors)
	o.Skipped += x.Skipped
}

// Window is one fixed-length window of a run. Windows are aligned to the run's
// start: window i of an incarnation covers [start+i*len, start+(i+1)*len), except
// that the last one ends when the run stops.
//
// Requests = OK + Errors.Total(); in the open model Dropped counts starts that
// found every VU busy and were never sent (they are not in Requests).
//
// ConnectFailures counts the requests whose connection could not be opened
// (refused, reset or timed out while connecting): nothing reached the
// target. They are in Requests and in Errors under their class, but not in
// RPS, which counts only requests that reached the target — a dead target
// has no throughput however fast the driver is refused.
type Window struct {
	RunID       string    `json:"run_id,omitempty"`
	Incarnation int       `json:"incarnation"`
	Index       int       `json:"index"`
	Start       time.Time `json:"start"`
	End         time.Time `json:"end"`

	Requests int64  `json:"requests"`
	OK       int64  `json:"ok"`
	Errors   Errors `json:"errors"`
	Dropped  int64  `json:"dropped"`
	Skipped  int64  `json:"skipped"`
	// ConnectFailures ⊆ Errors: requests that found no connection (see above).
	ConnectFailures int64   `json:"connect_failures,omitempty"`
	RPS             float64 `json:"rps"`
	// VUs is the number of active virtual users when the window closed;
	// InFlight the largest number of requests in flight during it. Together
	// with RPS they show a throughput limit on a ramp.
	VUs      int `json:"vus"`
	InFlight int `json:"in_flight"`
	// MaxVUs is the open model's VU cap (load.max_vus), 0 in the closed
	// model: a start dropped while InFlight reached it found every VU
	// waiting on the target.
	MaxVUs    int                `json:"max_vus,omitempty"`
	Target    float64            `json:"target,omitempty"` // ramp target at window end: VUs (closed) or rate/s (open)
	LatencyMs Latency            `json:"latency_ms"`
	Ops       map[string]OpStats `json:"ops"`
	// TLS is set for an https target: its handshakes in the window.
	TLS *TLS `json:"tls,omitempty"`
	// WebSocket is set when the scenario has websocket ops.
	WebSocket *WebSocket `json:"websocket,omitempty"`

	// Histogram is the merged HDR histogram of every request's latency in
	// microseconds, encoded by EncodeHistogram. It lets any percentile be
	// recomputed and windows be merged later.
	Histogram []byte `json:"-"`

	// Partial is set on a window cut short: the last one of a run stopped
	// early (Ctrl-C, a failed threshold) or of a duration that is not a
	// whole number of windows. Its rates cover less time than the others'
	// and its tail is the drain of the requests in flight, so analysis
	// leaves it out.
	Partial bool `json:"partial,omitempty"`

	// Events are faults noticed when the window closed (the target or its
	// database stopped); nil in a window without any.
	Events []Event `json:"events,omitempty"`

	// Gap is set on a placeholder row for a window that was lost (for example
	// the one in progress when a worker died). It has no measurements.
	Gap bool `json:"gap,omitempty"`

	Probes Probes `json:"probes"`
	// Custom holds series that have no field of their own, by name: an
	// imported k6 run's other metrics (see package interop). Nil for a
	// soak.
	Custom map[string]float64 `json:"custom,omitempty"`
	// ProbeFailures lists the probes that were failing when the window
	// closed, with their last error: why a Probes field is empty. Nil when
	// every probe answered (or none ran).
	ProbeFailures []ProbeFailure `json:"probe_failures,omitempty"`
}

// ProbeFailure is a probe that was failing when a window closed, and why.
type ProbeFailure struct {
	// Probe is the probe's name: process, heap.metric, heap.gc_hook,
	// heap.inspector or database.
	Probe string `json:"probe"`
	Error string `json:"error"`
}

// Probes are the server-side readings taken when the window closed. A nil
// pointer means "no reading" (probe off or failed), never zero.
type Probes struct {
	// CPUSeconds is the target's CPU time (user+sys, all processes) spent in
	// this window; CPUMicrosPerRequest divides it by the window's requests.
	CPUSeconds          *float64 `json:"cpu_seconds,omitempty"`
	CPUMicrosPerRequest *float64 `json:"cpu_us_per_request,omitempty"`
	RSSBytes            *int64   `json:"rss_bytes,omitempty"`
	// HeapBytes is the live heap after the last GC as the target reports it.
	HeapBytes *int64 `json:"heap_bytes,omitempty"`
	// HeapForcedGC is set when HeapBytes comes from a forced-GC checkpoint
	// (GC hook or inspector) in this window rather than a passive metric.
	HeapForcedGC bool `json:"heap_forced_gc,omitempty"`

	// AllocBytes is the bytes a Go target allocated on its heap during the
	// window and AllocBytesPerRequest that per request: the delta of the
	// cumulative go_memstats_alloc_bytes_total on its metrics page, read with
	// the heap metric. GCCycles is the GC cycles completed in the window
	// (go_gc_duration_seconds_count) and GCPer1kRequests that per 1,000
	// requests. GCCPUSeconds is the CPU time the Go runtime estimates its GC
	// spent (go_gc_cpu_seconds_total: VictoriaMetrics/metrics exposes it,
	// client_golang by default does not) and GCCPUShare that over the
	// window's CPUSeconds. Nil when not measured: no Go metrics page, the
	// previous window not read, or the target restarted in between (a
	// counter went down). The per-request figures need requests.
	AllocBytes           *int64   `json:"alloc_bytes,omitempty"`
	AllocBytesPerRequest *float64 `json:"alloc_bytes_per_request,omitempty"`
	GCCycles             *int64   `json:"gc_cycles,omitempty"`
	GCPer1kRequests      *float64 `json:"gc_per_1k_requests,omitempty"`
	GCCPUSeconds         *float64 `json:"gc_cpu_seconds,omitempty"`
	GCCPUShare           *float64 `json:"gc_cpu_share,omitempty"`

	Database *Database `json:"database,omitempty"`
	// SQLite is the target's SQLite file: its size and the rows of each
	// table at window close (probes.database.sqlite).
	SQLite *SQLite `json:"sqlite,omitempty"`

	// Node is a Node.js target's process.memoryUsage(), read through the
	// inspector right after its forced GC (probes.heap.inspector).
	Node *NodeMemory `json:"node,omitempty"`
	// EventLoopDelay is a Node.js target's event-loop delay over the window:
	// a perf_hooks.monitorEventLoopDelay histogram (10 ms resolution; the
	// 10 ms sampling interval is subtracted, so an idle loop reads about 0)
	// read and reset each window through the inspector. Its Max includes the
	// inspector's own forced GC of the previous window when the heap is read
	// every window; P99 is not moved by that one sample.
	EventLoopDelay *Pauses `json:"event_loop_delay_ms,omitempty"`
	// GCPause is a Go target's stop-the-world GC pauses during the window:
	// the delta of the go_gc_pauses_seconds histogram on its metrics page
	// (read with the heap metric, when the page has it). Quantiles are
	// interpolated within the histogram's buckets; Max is the upper bound of
	// the highest bucket that gained a pause.
	GCPause *Pauses `json:"gc_pause_ms,omitempty"`
	// HostForeignCPU is the share (0–1, of all the host's cores) of CPU
	// time during the window that went to processes other than the target,
	// its database and longhaul (probes.HostLoad): other work on the
	// machine, which disturbs the measurements.
	HostForeignCPU *float64 `json:"host_foreign_cpu,omitempty"`
	// Connections are the target's TCP connections on its serving port at
	// the window's close, counted by state in its network namespace's
	// socket table (probes.ConnCounter).
	Connections *Connections `json:"connections,omitempty"`

	// Where the CPU went, thread by thread (probes.ThreadCPU): each party's
	// CPU in cores (CPU seconds over the window's seconds; 1 = one full
	// core) and how busy it was in cores (running, or runnable and waiting
	// for a CPU: what it would have used on an idle machine). Nil where not
	// read (a target longhaul does not run, no schedstat for the busy
	// figures).
	//
	// HottestThread is the name (comm) of the target's busiest thread and
	// HottestThreadMain whether it is a process's main thread (a Node.js
	// target's JavaScript thread); HottestThreadCores the CPU it got and
	// HottestThreadBusy the share of the window it was running or waiting
	// for a CPU — near 1, it never waited for anything else: a
	// single-threaded wall.
	HottestThread      string   `json:"hottest_thread,omitempty"`
	HottestThreadMain  bool     `json:"hottest_thread_main,omitempty"`
	HottestThreadCores *float64 `json:"hottest_thread_cores,omitempty"`
	HottestThreadBusy  *float64 `json:"hottest_thread_busy,omitempty"`
	// TargetBusyCores is all of the target's threads' busy time, and
	// CoresAllowed the cores the target may use (its CPU affinity, capped
	// by a container's CPU quota).
	TargetBusyCores *float64 `json:"target_busy_cores,omitempty"`
	CoresAllowed    *float64 `json:"cores_allowed,omitempty"`
	// DatabaseCores and DatabaseBusyCores are the database's processes'
	// (a local cluster's or its container's).
	DatabaseCores     *float64 `json:"database_cores,omitempty"`
	DatabaseBusyCores *float64 `json:"database_busy_cores,omitempty"`
	// DriverCores and DriverBusyCores are longhaul's own process's: a
	// driver whose busy time is well above its CPU waited for a CPU, and
	// its latencies include that wait.
	DriverCores     *float64 `json:"driver_cores,omitempty"`
	DriverBusyCores *float64 `json:"driver_busy_cores,omitempty"`
}

// Connections counts a target's TCP connections on the port it serves on,
// by state, at one moment. Established are open both ways. CloseWait are
// connections whose client has closed its end while the server has not
// closed its own: a few in passing are normal; a count that only grows is
// sessions (or keep-alive connections) the server never closes, each
// holding a socket, a file descriptor and whatever the session owns.
type Connections struct {
	Established int64 `json:"established"`
	CloseWait   int64 `json:"close_wait"`
}

// NodeMemory is one reading of a Node.js process's process.memoryUsage(), in
// bytes. External is memory of C++ objects bound to JavaScript objects
// (Buffers among them), outside the V8 heap; ArrayBuffers is the part of
// External held by ArrayBuffers and Buffers. RSS is the whole process's
// resident memory as Node.js sees it.
type NodeMemory struct {
	HeapUsedBytes     int64 `json:"heap_used_bytes"`
	HeapTotalBytes    int64 `json:"heap_total_bytes"`
	ExternalBytes     int64 `json:"external_bytes"`
	ArrayBuffersBytes int64 `json:"array_buffers_bytes"`
	RSSBytes          int64 `json:"rss_bytes"`
}

// Pauses summarises the pauses (Go GC stop-the-world pauses) or delays
// (Node.js event-loop delay samples) of one window, in milliseconds. Count
// is how many pauses or samples there were.
type Pauses struct {
	P50Ms float64 `json:"p50"`
	P99Ms float64 `json:"p99"`
	MaxMs float64 `json:"max"`
	Count int64   `json:"count"`
}

// SQLite is one reading of a target's SQLite database file.
type SQLite struct {
	// FileBytes is the size of the database file; WALBytes that of its
	// write-ahead log (0 when there is none).
	FileBytes int64 `json:"file_bytes"`
	WALBytes  int64 `json:"wal_bytes"`
	// Tables lists the user tables (not sqlite_*), sorted by name.
	Tables []SQLiteTable `json:"tables,omitempty"`
}

// SQLiteTable is one table's row count at window close. Estimated is set
// when Rows is not an exact COUNT(*) (a large table: see probes.SQLiteReader).
type SQLiteTable struct {
	Name      string `json:"name"`
	Rows      int64  `json:"rows"`
	Estimated bool   `json:"estimated,omitempty"`
}

// Database holds one window's database statistics deltas: PostgreSQL's
// pg_stat_*, or the same shape read from MySQL/MariaDB (see
// probes.PGStats for what each field holds there).
type Database struct {
	// TuplesReturned and Commits are pg_stat_database deltas over the window.
	TuplesReturned int64 `json:"tuples_returned"`
	Commits        int64 `json:"commits"`
	// Statements is the statements the clients sent in the window where the
	// database counts them (MySQL, MariaDB: Questions; PostgreSQL: the calls
	// in pg_stat_statements of the target's database, when it is loaded),
	// the probe's own left out, and StatementsPerRequest that per driver
	// request; 0 where not counted. StatementsCounted says PostgreSQL's
	// were (a window with none is then 0, not missing).
	Statements           int64   `json:"statements,omitempty"`
	StatementsPerRequest float64 `json:"statements_per_request,omitempty"`
	StatementsCounted    bool    `json:"statements_counted,omitempty"`
	// StatementsUnavailable says why a PostgreSQL database's statements were
	// not counted (pg_stat_statements not created or not loaded), as the
	// probe found it; empty when they were, and for other databases.
	StatementsUnavailable string `json:"statements_unavailable,omitempty"`
	// TopStatements are the window's busiest statements from
	// pg_stat_statements: the most called and those with the most rows
	// (MaxTopStatements of each), most called first. A statement
	// outside both lists in a window is left out of that window's list,
	// not of Statements.
	TopStatements []Statement `json:"top_statements,omitempty"`
	// Transactions is the transactions the database committed or rolled
	// back in the window (PostgreSQL: xact_commit + xact_rollback, less the
	// probe's own) and XactPerRequest that per driver request. Nil where
	// not counted (MySQL, MariaDB: their status counters have no count of
	// autocommit transactions).
	Transactions   *int64   `json:"transactions,omitempty"`
	XactPerRequest *float64 `json:"xact_per_request,omitempty"`
	// RowsReadPerRequest is the rows read (seq_tup_read + idx_tup_fetch over
	// all user tables) per driver request in the window.
	RowsReadPerRequest float64 `json:"rows_read_per_request"`
	Tables             []Table `json:"tables,omitempty"`
	// KeysExamined is the index keys a MongoDB server examined in the window
	// (serverStatus metrics.queryExecutor.scanned), KeysExaminedPerRequest
	// that per driver request, and ScanAndOrder the queries it sorted in
	// memory (metrics.operation.scanAndOrder); 0 on other kinds.
	KeysExamined           int64   `json:"keys_examined,omitempty"`
	KeysExaminedPerRequest float64 `json:"keys_examined_per_request,omitempty"`
	ScanAndOrder           int64   `json:"scan_and_order,omitempty"`
	// Kind is DatabaseMongoDB for a MongoDB server's reading (its tables are
	// collections, its rows documents); empty for the SQL databases.
	Kind string `json:"kind,omitempty"`
	// Absent names the readings this database does not offer (FerretDB
	// answers none of MongoDB's query metrics: AbsentDocumentsExamined and
	// the others), so a zero there is not read as "none".
	Absent []string `json:"absent,omitempty"`
}

// DatabaseMongoDB is Database.Kind of a MongoDB server's reading.
const DatabaseMongoDB = "mongodb"

// Readings a MongoDB-protocol server may not offer, as Database.Absent
// names them.
const (
	AbsentDocumentsExamined = "documents_examined" // serverStatus metrics.queryExecutor.scannedObjects
	AbsentKeysExamined      = "keys_examined"      // serverStatus metrics.queryExecutor.scanned
	AbsentCollectionScans   = "collection_scans"   // $collStats queryExecStats.collectionScans
	AbsentScanAndOrder      = "scan_and_order"     // serverStatus metrics.operation.scanAndOrder
)

// Statement is one statement's pg_stat_statements counters over a window:
// the calls and the rows it retrieved or affected. Query is its normalised
// text (constants as $1, …; cut to a few hundred bytes), QueryID
// PostgreSQL's query identifier, which names it across windows.
type Statement struct {
	QueryID int64  `json:"query_id"`
	Query   string `json:"query"`
	Calls   int64  `json:"calls"`
	Rows    int64  `json:"rows"`
}

// StatementSums adds up statements by query id over windows (a make'd
// map; nil reads as empty).
type StatementSums map[int64]*Statement

// Add adds a window's statements.
func (s StatementSums) Add(ss []Statement) {
	for _, st := range ss {
		sum := s[st.QueryID]
		if sum == nil {
			sum = &Statement{QueryID: st.QueryID, Query: st.Query}
			s[st.QueryID] = sum
		}
		sum.Calls += st.Calls
		sum.Rows += st.Rows
	}
}

// List returns the sums, in no particular order.
func (s StatementSums) List() []Statement {
	out := make([]Statement, 0, len(s))
	for _, st := range s {
		out = append(out, *st)
	}
	return out
}

// MaxTopStatements bounds a window's statement list: the most called and
// the most rows, MaxTopStatements of each (a statement can be both).
const MaxTopStatements = 10

// TopStatements returns the n most called statements of ss and the n with
// the most rows (each once), most called first (then by query id). ss is
// reordered.
func TopStatements(ss []Statement, n int) []Statement {
	if len(ss) <= n {
		slices.SortFunc(ss, byCalls)
		return ss
	}
	slices.SortFunc(ss, func(a, b Statement) int {
		if c := cmp.Compare(b.Rows, a.Rows); c != 0 {
			return c
		}
		return cmp.Compare(a.QueryID, b.QueryID)
	})
	keep := map[int64]bool{}
	for _, s := range ss[:n] {
		keep[s.QueryID] = true
	}
	slices.SortFunc(ss, byCalls)
	out := slices.Clone(ss[:n])
	for _, s := range ss[n:] {
		if keep[s.QueryID] {
			out = append(out, s)
		}
	}
	return out
}

func byCalls(a, b Statement) int {
	if c := cmp.Compare(b.Calls, a.Calls); c != 0 {
		return c
	}
	return cmp.Compare(a.QueryID, b.QueryID)
}

// Table is one user table's pg_stat_user_tables reading: LiveRows at window
// close, the rest deltas over the window.
type Table struct {
	Name               string  `json:"name"`
	LiveRows           int64   `json:"live_rows"`
	SeqScans           int64   `json:"seq_scans"`
	SeqTuplesRead      int64   `json:"seq_tuples_read"`
	IndexScans         int64   `json:"index_scans"`
	IndexTuplesFetched int64   `json:"index_tuples_fetched"`
	RowsReadPerRequest float64 `json:"rows_read_per_request"`
}

// Duration is the window's length.
func (w Window) Duration() time.Duration { return w.End.Sub(w.Start) }

// Reached is the number of requests that reached the target: Requests
// without the connect failures. RPS is Reached over the window's length.
func (w Window) Reached() int64 { return w.Requests - w.ConnectFailures }
