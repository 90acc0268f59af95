package probes

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/internal/freeport"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

func TestDatabaseDelta(t *testing.T) {
	prev := PGStats{TuplesReturned: 1000, Commits: 10, Tables: map[uint32]PGTable{
		1: {Name: "items", LiveRows: 100, SeqScans: 5, SeqTuplesRead: 500, IndexScans: 0, IndexTuplesFetched: 0},
		2: {Name: "users", LiveRows: 10, SeqScans: 1, SeqTuplesRead: 10, IndexScans: 40, IndexTuplesFetched: 40},
	}}
	cur := PGStats{TuplesReturned: 3000, Commits: 50, Tables: map[uint32]PGTable{
		1: {Name: "items", LiveRows: 140, SeqScans: 15, SeqTuplesRead: 1700},
		2: {Name: "users", LiveRows: 12, SeqScans: 1, SeqTuplesRead: 10, IndexScans: 60, IndexTuplesFetched: 60},
		3: {Name: "audit.log", LiveRows: 7, IndexScans: 3, IndexTuplesFetched: 30}, // created in the window
	}}
	got := DatabaseDelta(prev, cur, 40)
	want := &window.Database{
		TuplesReturned:     2000,
		Commits:            40,
		RowsReadPerRequest: float64(1200+20+30) / 40,
		Tables: []window.Table{
			{Name: "audit.log", LiveRows: 7, IndexScans: 3, IndexTuplesFetched: 30, RowsReadPerRequest: 30.0 / 40},
			{Name: "items", LiveRows: 140, SeqScans: 10, SeqTuplesRead: 1200, RowsReadPerRequest: 1200.0 / 40},
			{Name: "users", LiveRows: 12, IndexScans: 20, IndexTuplesFetched: 20, RowsReadPerRequest: 20.0 / 40},
		},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("DatabaseDelta =\n%+v\nwant\n%+v", got, want)
	}

	// A statistics reset makes counters go down: the delta is the new value.
	reset := PGStats{TuplesReturned: 5, Commits: 1, Tables: map[uint32]PGTable{1: {Name: "items", LiveRows: 140, SeqScans: 1, SeqTuplesRead: 140}}}
	got = DatabaseDelta(cur, reset, 0)
	if got.TuplesReturned != 5 || got.Commits != 1 || got.Tables[0].SeqTuplesRead != 140 || got.RowsReadPerRequest != 0 {
		t.Errorf("after a reset: %+v", got)
	}
}

// TestDatabaseDeltaTransactions: transactions per request from two
// PostgreSQL readings (already net of the probe's own); a reading one short
// (the probe's last transaction not published yet) gives 0, not a reset;
// MySQL readings have none.
func TestDatabaseDeltaTransactions(t *testing.T) {
	pg := func(commits, xacts int64) PGStats {
		return PGStats{Commits: commits, Transactions: xacts, HasTransactions: true}
	}
	tests := []struct {
		name      string
		prev, cur PGStats
		requests  int64
		want      any // *int64 deref'd, or nil
		per       any
	}{
		{"window", pg(100, 95), pg(400, 394), 100, int64(299), 2.99},
		{"no requests", pg(100, 95), pg(110, 104), 0, int64(9), nil},
		{"the probe's transaction late", pg(100, 95), pg(100, 94), 10, int64(0), 0.0},
		{"statistics reset", pg(400, 394), pg(12, 10), 5, int64(10), 2.0},
		{"mysql", PGStats{Commits: 5}, PGStats{Commits: 9}, 10, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DatabaseDelta(tt.prev, tt.cur, tt.requests)
			if got := deref(d.Transactions); got != tt.want {
				t.Errorf("transactions %v, want %v", got, tt.want)
			}
			if got := deref(d.XactPerRequest); got != tt.per {
				t.Errorf("per request %v, want %v", got, tt.per)
			}
		})
	}
}

func TestDatabaseDeltaMaxTables(t *testing.T) {
	cur := PGStats{Tables: map[uint32]PGTable{}}
	for i := range MaxTables + 20 {
		cur.Tables[uint32(i)] = PGTable{Name: fmt.Sprintf("t%03d", i), SeqTuplesRead: int64(i)}
	}
	got := DatabaseDelta(PGStats{}, cur, 1)
	if len(got.Tables) != MaxTables {
		t.Fatalf("%d tables, want %d", len(got.Tables), MaxTables)
	}
	if got.Tables[0].Name != "t020" { // the 20 least-read tables are left out
		t.Errorf("first table kept = %s, want t020", got.Tables[0].Name)
	}
	var all int64
	for i := range MaxTables + 20 {
		all += int64(i)
	}
	if got.RowsReadPerRequest != float64(all) {
		t.Errorf("RowsReadPerRequest = %v, want %v (every table counts)", got.RowsReadPerRequest, all)
	}
}

// pgLoad is a connection that plays the target: it reads the items table by
// sequential scans and the users table by index.
type pgLoad struct {
	t    testing.TB
	conn *pgx.Conn
}

func newPGLoad(t testing.TB, dsn string, items, users int) *pgLoad {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	l := &pgLoad{t: t, conn: conn}
	l.exec(`CREATE TABLE items (id serial PRIMARY KEY, bucket int NOT NULL, title text)`)
	l.exec(`CREATE TABLE users (id int PRIMARY KEY, name text)`)
	l.exec(fmt.Sprintf(`INSERT INTO items (bucket, title) SELECT g %% 100, 'item ' || g FROM generate_series(1, %d) g`, items))
	l.exec(fmt.Sprintf(`INSERT INTO users SELECT g, 'user ' || g FROM generate_series(1, %d) g`, users))
	l.exec(`SET enable_seqscan = off`)          // index lookups on users even though it is small
	l.exec(`SELECT pg_stat_force_next_flush()`) // the set-up is before any baseline
	return l
}

func (l *pgLoad) exec(sql string) {
	l.t.Helper()
	if _, err := l.conn.Exec(context.Background(), sql); err != nil {
		l.t.Fatalf("%s: %v", sql, err)
	}
}

// requests runs n "list" requests (a seq scan of items: no index on bucket)
// and n "get user" requests (an index lookup), then makes this backend
// publish its statistics now instead of within the next second.
func (l *pgLoad) requests(n int) {
	l.t.Helper()
	ctx := context.Background()
	for i := range n {
		if _, err := l.conn.Exec(ctx, `SELECT count(*) FROM items WHERE bucket = $1`, i%100); err != nil {
			l.t.Fatal(err)
		}
		if _, err := l.conn.Exec(ctx, `SELECT name FROM users WHERE id = $1`, i+1); err != nil {
			l.t.Fatal(err)
		}
	}
	l.exec(`SELECT pg_stat_force_next_flush()`)
}

// TestDatabase runs the database probe's tests against one private
// PostgreSQL cluster, a fresh database each.
func TestDatabase(t *testing.T) {
	cluster := pgtest.Start(t)
	t.Run("deltas", func(t *testing.T) { testSampleDatabase(t, pgtest.NewDatabase(t, cluster)) })
	t.Run("connection dropped", func(t *testing.T) { testSampleDatabaseConnectionDropped(t, pgtest.NewDatabase(t, cluster)) })
	t.Run("delay", func(t *testing.T) { testSampleDatabaseDelay(t, pgtest.NewDatabase(t, cluster)) })
	t.Run("transactions", func(t *testing.T) { testSampleDatabaseTransactions(t, pgtest.NewDatabase(t, cluster)) })
	t.Run("no statements", func(t *testing.T) { testSampleDatabaseNoStatements(t, pgtest.NewDatabase(t, cluster)) })
}

func testSampleDatabase(t *testing.T, dsn string) {
	const items, users = 1000, 50
	load := newPGLoad(t, dsn, items, users)

	s := startSampler(t, Config{DatabaseURL: dsn, DatabaseDelay: -1, MaxSampleTime: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if ps := s.Problems(); len(ps) != 0 {
		t.Fatalf("Problems() after Start = %v", ps)
	}

	tests := []struct {
		name string
		n    int // list + get pairs
	}{
		{"window with load", 8},
		{"idle window", 0},
		{"heavier window", 15},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			load.requests(tt.n)
			w := &window.Window{Index: i, End: time.Now(), Requests: int64(2 * tt.n)}
			s.Sample(context.Background(), w)
			d := w.Probes.Database
			if d == nil {
				t.Fatalf("no database reading; problems: %v", s.Problems())
			}
			tables := map[string]window.Table{}
			for _, tb := range d.Tables {
				tables[tb.Name] = tb
			}
			wantItems := window.Table{Name: "items", LiveRows: items, SeqScans: int64(tt.n), SeqTuplesRead: int64(tt.n * items)}
			wantUsers := window.Table{Name: "users", LiveRows: users, IndexScans: int64(tt.n), IndexTuplesFetched: int64(tt.n)}
			if tt.n > 0 {
				wantItems.RowsReadPerRequest = float64(tt.n*items) / float64(2*tt.n)
				wantUsers.RowsReadPerRequest = float64(tt.n) / float64(2*tt.n)
			}
			if got := tables["items"]; got != wantItems {
				t.Errorf("items = %+v, want %+v", got, wantItems)
			}
			if got := tables["users"]; got != wantUsers {
				t.Errorf("users = %+v, want %+v", got, wantUsers)
			}
			if tt.n > 0 {
				want := float64(tt.n*items+tt.n) / float64(2*tt.n)
				if d.RowsReadPerRequest != want {
					t.Errorf("rows read per request = %v, want %v", d.RowsReadPerRequest, want)
				}
				// Every request is a transaction; tup_returned counts the
				// scanned rows too.
				if d.Commits < int64(2*tt.n) || d.TuplesReturned < int64(tt.n*items) {
					t.Errorf("database: %d commits, %d tuples returned; want at least %d and %d", d.Commits, d.TuplesReturned, 2*tt.n, tt.n*items)
				}
			}
			t.Logf("window %d: tup_returned %d, commits %d (the probe's own share included)", i, d.TuplesReturned, d.Commits)
		})
	}
}

func testSampleDatabaseConnectionDropped(t *testing.T, dsn string) {
	load := newPGLoad(t, dsn, 100, 10)
	s := startSampler(t, Config{DatabaseURL: dsn, DatabaseDelay: -1, MaxSampleTime: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	load.requests(5)
	// The server drops the probe's connection between two windows.
	load.exec(fmt.Sprintf(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '%s' AND datname = current_database()`, ApplicationName))
	w := &window.Window{Index: 0, End: time.Now(), Requests: 10}
	s.Sample(context.Background(), w)
	if w.Probes.Database == nil {
		t.Fatalf("no reading after the connection dropped; problems: %v", s.Problems())
	}
	if got := findTable(w.Probes.Database, "items").SeqScans; got != 5 {
		t.Errorf("items seq scans = %d, want 5", got)
	}
	if got, want := s.db.(*PGStatsReader).connects, 2; got != want {
		t.Errorf("%d connections, want %d (the reading reconnected)", got, want)
	}
}

func findTable(d *window.Database, name string) window.Table {
	for _, t := range d.Tables {
		if t.Name == name {
			return t
		}
	}
	return window.Table{}
}

func TestSampleDatabaseGone(t *testing.T) {
	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/test?sslmode=disable&connect_timeout=1", freeport.ForTest(t))
	var logs syncBuffer
	s := startSampler(t, Config{DatabaseURL: dsn, Spec: scenarios.Probes{Database: &scenarios.DatabaseProbe{Postgres: ptr(true)}}, Logger: newTextLogger(&logs)})
	for i := range 3 {
		w := &window.Window{Index: i, End: time.Now(), Requests: 10}
		start := time.Now()
		s.Sample(context.Background(), w)
		if w.Probes.Database != nil {
			t.Errorf("window %d: a database reading without a database", i)
		}
		if d := time.Since(start); d > 1500*time.Millisecond {
			t.Errorf("window %d: Sample took %v", i, d)
		}
	}
	ps := s.Problems()
	if len(ps) != 1 || ps[0].Probe != ProbeDatabase || !strings.Contains(ps[0].Message, "connect") {
		t.Errorf("Problems() = %+v, want the database unreachable", ps)
	}
	if got := strings.Count(logs.String(), "level=WARN"); got != 1 {
		t.Errorf("%d warnings, want 1:\n%s", got, logs.String())
	}
}

func testSampleDatabaseDelay(t *testing.T, dsn string) {
	const delay = 300 * time.Millisecond
	s := startSampler(t, Config{DatabaseURL: dsn, DatabaseDelay: delay, MaxSampleTime: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	end := time.Now()
	w := &window.Window{Index: 0, Start: end.Add(-10 * time.Second), End: end, Requests: 1}
	s.Sample(context.Background(), w)
	if w.Probes.Database == nil {
		t.Fatalf("no reading; problems: %v", s.Problems())
	}
	if d := time.Since(end); d < delay {
		t.Errorf("the reading came %v after the window's end, want at least %v", d, delay)
	}
}

// testSampleDatabaseTransactions: every request of the load is one
// transaction (plus the one that publishes its statistics); the probe's own
// readings are not counted. A backend publishes its statistics at most once
// a second, so on a new connection the probe's first transactions are
// published a reading or two late: one window can be one short and a later
// one over; the total is exact.
func testSampleDatabaseTransactions(t *testing.T, dsn string) {
	load := newPGLoad(t, dsn, 100, 10)
	load.requests(1) // the load's statements are prepared: no transactions of their own later
	s := startSampler(t, Config{DatabaseURL: dsn, DatabaseDelay: -1, MaxSampleTime: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	var total, want int64
	for i, n := range []int{10, 0, 10, 5} {
		time.Sleep(1100 * time.Millisecond)
		load.requests(n)
		w := &window.Window{Index: i, End: time.Now(), Requests: int64(2*n + 1)}
		s.Sample(context.Background(), w)
		d := w.Probes.Database
		if d == nil || d.Transactions == nil || d.XactPerRequest == nil {
			t.Fatalf("window %d: no transactions: %+v (problems %v)", i, d, s.Problems())
		}
		got, wantHere := *d.Transactions, int64(2*n+1)
		total += got
		want += wantHere
		t.Logf("window %d: %d transactions, %.3f per request", i, got, *d.XactPerRequest)
		if got < wantHere-1 || got > wantHere+1 {
			t.Errorf("window %d: %d transactions, want %d ± 1 (the load's, not the probe's)", i, got, wantHere)
		}
	}
	if total != want {
		t.Errorf("%d transactions in all, want %d", total, want)
	}
}

// TestDatabaseStatements: with pg_stat_statements loaded and created in the
// target's database, each window counts the target's statements exactly
// (pg_stat_statements counts a statement when it ends, with no publishing
// delay) and lists them with their calls and rows; the probe's own
// statements are not among them.
func TestDatabaseStatements(t *testing.T) {
	needStatStatements(t)
	cluster := pgtest.StartWith(t, pgtest.ClusterOptions{Settings: []string{"shared_preload_libraries=pg_stat_statements"}})
	dsn := pgtest.NewDatabase(t, cluster)
	load := newPGLoad(t, dsn, 100, 50)
	load.exec(`CREATE EXTENSION pg_stat_statements`)
	load.requests(1) // the load's statements are prepared before the baseline
	s := startSampler(t, Config{DatabaseURL: dsn, DatabaseDelay: -1, MaxSampleTime: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	for i, n := range []int{10, 0, 25} {
		load.requests(n)
		w := &window.Window{Index: i, End: time.Now(), Requests: int64(2 * n)}
		s.Sample(context.Background(), w)
		d := w.Probes.Database
		if d == nil {
			t.Fatalf("window %d: no database reading; problems: %v", i, s.Problems())
		}
		if !d.StatementsCounted || d.StatementsUnavailable != "" {
			t.Fatalf("window %d: statements not counted (%q)", i, d.StatementsUnavailable)
		}
		// Each request is one statement; requests() ends with one more
		// (pg_stat_force_next_flush).
		if want := int64(2*n + 1); d.Statements != want {
			t.Errorf("window %d: %d statements, want %d (the load's, not the probe's)", i, d.Statements, want)
		}
		byText := map[string]window.Statement{}
		for _, st := range d.TopStatements {
			if strings.Contains(st.Query, "longhaul-probes") || strings.Contains(st.Query, "pg_stat_") && !strings.Contains(st.Query, "pg_stat_force_next_flush") {
				t.Errorf("window %d: the probe's own statement listed: %+v", i, st)
			}
			byText[st.Query] = st
		}
		wantList := map[string]window.Statement{
			"SELECT count(*) FROM items WHERE bucket = $1": {Calls: int64(n), Rows: int64(n)},
			"SELECT name FROM users WHERE id = $1":         {Calls: int64(n), Rows: int64(n)},
			"SELECT pg_stat_force_next_flush()":            {Calls: 1, Rows: 1},
		}
		for q, want := range wantList {
			got := byText[q]
			if want.Calls == 0 {
				if got.Calls != 0 {
					t.Errorf("window %d: %q listed with %d calls in an idle window", i, q, got.Calls)
				}
				continue
			}
			if got.Calls != want.Calls || got.Rows != want.Rows || got.QueryID == 0 {
				t.Errorf("window %d: %q = %+v, want %d calls and %d rows with a query id", i, q, got, want.Calls, want.Rows)
			}
		}
		if n > 0 && d.StatementsPerRequest != float64(2*n+1)/float64(2*n) {
			t.Errorf("window %d: %.3f statements per request, want %.3f", i, d.StatementsPerRequest, float64(2*n+1)/float64(2*n))
		}
		t.Logf("window %d: %d statements, %.3f per request, %d listed", i, d.Statements, d.StatementsPerRequest, len(d.TopStatements))
	}
}

// testSampleDatabaseNoStatements: without pg_stat_statements in the
// database, or with it created but not loaded, the windows say which.
func testSampleDatabaseNoStatements(t *testing.T, dsn string) {
	needStatStatements(t)
	load := newPGLoad(t, dsn, 10, 10)
	sample := func() *window.Database {
		s, err := New(Config{DatabaseURL: dsn, DatabaseDelay: -1, MaxSampleTime: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		s.Start(context.Background())
		load.requests(3)
		w := &window.Window{Index: 0, End: time.Now(), Requests: 6}
		s.Sample(context.Background(), w)
		if w.Probes.Database == nil {
			t.Fatalf("no reading; problems: %v", s.Problems())
		}
		return w.Probes.Database
	}
	if d := sample(); d.StatementsCounted || !strings.Contains(d.StatementsUnavailable, "extension is not created") {
		t.Errorf("without the extension: counted %v, unavailable %q", d.StatementsCounted, d.StatementsUnavailable)
	}
	load.exec(`CREATE EXTENSION pg_stat_statements`)
	if d := sample(); d.StatementsCounted || !strings.Contains(d.StatementsUnavailable, "shared_preload_libraries") {
		t.Errorf("created, not loaded: counted %v, unavailable %q", d.StatementsCounted, d.StatementsUnavailable)
	}
}

func needStatStatements(t *testing.T) {
	t.Helper()
	if libs, _ := filepath.Glob("/usr/lib/postgresql/*/lib/pg_stat_statements.so"); len(libs) == 0 {
		t.Skip("no pg_stat_statements library (/usr/lib/postgresql/*/lib): install PostgreSQL's contrib modules")
	}
}

// TestDatabaseDeltaStatements: statement deltas by query id (a new one
// counts from zero, a reset from its new value); the first reading with
// pg_stat_statements has no delta; a reading without it says why.
func TestDatabaseDeltaStatements(t *testing.T) {
	pg := func(counts map[int64]PGStatement) PGStats {
		st := PGStats{HasStatements: true, StatementCounts: counts}
		for _, c := range counts {
			st.Statements += c.Calls
		}
		return st
	}
	prev := pg(map[int64]PGStatement{1: {"SELECT a", 100, 100}, 2: {"SELECT b", 50, 5000}})
	cur := pg(map[int64]PGStatement{1: {"SELECT a", 160, 160}, 2: {"SELECT b", 50, 5000}, 3: {"INSERT c", 7, 7}})
	d := DatabaseDelta(prev, cur, 30)
	want := []window.Statement{{QueryID: 1, Query: "SELECT a", Calls: 60, Rows: 60}, {QueryID: 3, Query: "INSERT c", Calls: 7, Rows: 7}}
	if !d.StatementsCounted || d.Statements != 67 || d.StatementsPerRequest != 67.0/30 || fmt.Sprint(d.TopStatements) != fmt.Sprint(want) {
		t.Errorf("window: counted %v, %d statements, %.3f per request, %+v; want 67, %.3f, %+v", d.StatementsCounted, d.Statements, d.StatementsPerRequest, d.TopStatements, 67.0/30, want)
	}
	reset := pg(map[int64]PGStatement{1: {"SELECT a", 4, 4}})
	if d := DatabaseDelta(cur, reset, 2); d.Statements != 4 || len(d.TopStatements) != 1 || d.TopStatements[0].Calls != 4 {
		t.Errorf("after a reset: %d statements, %+v; want 4", d.Statements, d.TopStatements)
	}
	if d := DatabaseDelta(PGStats{StatementsUnavailable: "x"}, cur, 2); d.Statements != 0 || d.StatementsCounted || d.StatementsUnavailable != "" {
		t.Errorf("first reading with statements: %+v, want no delta and nothing missing", d)
	}
	if d := DatabaseDelta(cur, PGStats{StatementsUnavailable: "not loaded"}, 2); d.StatementsCounted || d.StatementsUnavailable != "not loaded" {
		t.Errorf("without statements: %+v, want the reason", d)
	}
}

// TestDatabaseDeltaStatementsEvicted: a statement evicted from
// pg_stat_statements takes its calls out of the sum without a reset; the
// window counts the others' calls, not the sum's fall.
func TestDatabaseDeltaStatementsEvicted(t *testing.T) {
	prev := PGStats{HasStatements: true, Statements: 1100, StatementCounts: map[int64]PGStatement{1: {"SELECT a", 100, 100}, 2: {"SELECT old", 1000, 1000}}}
	cur := PGStats{HasStatements: true, Statements: 130, StatementCounts: map[int64]PGStatement{1: {"SELECT a", 120, 120}, 3: {"SELECT new", 10, 10}}}
	if d := DatabaseDelta(prev, cur, 10); d.Statements != 30 || d.StatementsPerRequest != 3 {
		t.Errorf("%d statements, %.1f per request; want 30 and 3", d.Statements, d.StatementsPerRequest)
	}
}
