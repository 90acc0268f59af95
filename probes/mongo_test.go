package probes

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/longhaul-dev/longhaul/internal/mongotest"
	"github.com/longhaul-dev/longhaul/window"
)

func TestNewMongoStatsReader(t *testing.T) {
	for _, tt := range []struct{ in, wantErr string }{
		{in: "mongodb://127.0.0.1:27017/shop"},
		{in: "mongodb://u:p@127.0.0.1:27017/shop?authSource=admin"},
		{in: "mongodb://127.0.0.1:27017/", wantErr: "names no database"},
		{in: "mongodb://u:secret@127.0.0.1:27017", wantErr: "names no database"},
	} {
		_, err := NewMongoStatsReader(tt.in)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tt.in, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%q: error %v, want %q", tt.in, err, tt.wantErr)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%q: the error shows the password: %v", tt.in, err)
		}
	}
	if r, err := newDatabaseReader("mongodb://127.0.0.1:1/db", ""); err != nil {
		t.Errorf("a mongodb:// URL: %v", err)
	} else if _, ok := r.(*MongoStatsReader); !ok {
		t.Errorf("a mongodb:// URL gave a %T", r)
	}
}

// shareExamined gives each collection its collection scans times its
// documents, scaled down to what the server examined in all, and shares the
// rest by read operations.
func TestShareExamined(t *testing.T) {
	prev := &mongoRaw{docsExamined: 1000, collScans: map[string]int64{"items": 10, "users": 0},
		readOps: map[string]int64{"items": 100, "users": 50}}
	for _, tt := range []struct {
		name     string
		cur      mongoRaw
		seq, idx map[string]int64
	}{
		{"full scans and index reads",
			mongoRaw{docsExamined: 1000 + 5*2000 + 300, docs: map[string]int64{"items": 2000, "users": 10},
				collScans: map[string]int64{"items": 15, "users": 0}, readOps: map[string]int64{"items": 200, "users": 150}, hasTop: true},
			map[string]int64{"items": 10000}, map[string]int64{"items": 150, "users": 150}},
		{"scans stopped early by a limit: scaled down",
			mongoRaw{docsExamined: 1000 + 4000, docs: map[string]int64{"items": 2000},
				collScans: map[string]int64{"items": 15}},
			map[string]int64{"items": 4000}, map[string]int64{}},
		{"no top: the rest stays unplaced",
			mongoRaw{docsExamined: 1000 + 500, docs: map[string]int64{"items": 2000},
				collScans: map[string]int64{"items": 10}, readOps: map[string]int64{"items": 300}},
			map[string]int64{}, map[string]int64{}},
	} {
		seq, idx := shareExamined(prev, &tt.cur)
		if !mapsEqual(seq, tt.seq) || !mapsEqual(idx, tt.idx) {
			t.Errorf("%s: seq %v idx %v, want %v and %v", tt.name, seq, idx, tt.seq, tt.idx)
		}
	}
}

func mapsEqual(a, b map[string]int64) bool {
	for k, v := range a {
		if v != 0 && b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// TestMongoStatsReader reads a real server (mongod, else FerretDB): the
// documents of each collection, the probe's own commands left out of the
// statements, and, from mongod, documents examined by a collection scan
// placed on the scanned collection; from FerretDB, the readings it does not
// offer named in Absent.
func TestMongoStatsReader(t *testing.T) {
	srv := mongotest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(srv.URI))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	db := c.Database("test")
	docs := make([]any, 500)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "bucket", Value: i % 10}}
	}
	if _, err := db.Collection("items").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Collection("users").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatal(err)
	}

	r, err := NewMongoStatsReader(srv.URI)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	before, tb, err := r.ReadTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Ten unindexed queries on items: ten collection scans of 500 documents.
	for b := range 10 {
		cur, err := db.Collection("items").Find(ctx, bson.D{{Key: "bucket", Value: b}})
		if err != nil {
			t.Fatal(err)
		}
		var got []bson.M
		if err := cur.All(ctx, &got); err != nil || len(got) != 50 {
			t.Fatalf("bucket %d: %d documents (%v), want 50", b, len(got), err)
		}
	}
	after, ta, err := r.ReadTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := DatabaseDelta(before, after, 10)
	MongoDelta(d, tb, ta, 10)
	rows := map[string]window.Table{}
	for _, tbl := range d.Tables {
		rows[tbl.Name] = tbl
	}
	if rows["items"].LiveRows != 500 || rows["users"].LiveRows != 1 {
		t.Errorf("documents: items %d users %d, want 500 and 1", rows["items"].LiveRows, rows["users"].LiveRows)
	}
	if d.Kind != window.DatabaseMongoDB {
		t.Errorf("Kind %q, want %q", d.Kind, window.DatabaseMongoDB)
	}
	t.Logf("ferretdb %v: %+v", srv.FerretDB, *d)
	if srv.FerretDB {
		for _, a := range []string{window.AbsentDocumentsExamined, window.AbsentKeysExamined, window.AbsentCollectionScans, window.AbsentScanAndOrder} {
			if !slices.Contains(d.Absent, a) {
				t.Errorf("FerretDB: Absent %v lacks %s", d.Absent, a)
			}
		}
		return
	}
	if len(d.Absent) > 0 {
		t.Errorf("mongod: Absent %v, want none", d.Absent)
	}
	if it := rows["items"]; it.SeqScans != 10 || it.SeqTuplesRead != 5000 {
		t.Errorf("items: %d collection scans reading %d documents, want 10 and 5,000", it.SeqScans, it.SeqTuplesRead)
	}
	if d.TuplesReturned < 5000 || d.RowsReadPerRequest < 500 {
		t.Errorf("documents examined %d (%.0f per request), want ≥ 5,000 (≥ 500)", d.TuplesReturned, d.RowsReadPerRequest)
	}
	// Ten finds, each with a getMore at most; the probe's commands are not counted.
	if d.Statements < 10 || d.Statements > 20 {
		t.Errorf("statements %d, want the 10 finds (and their getMores) only", d.Statements)
	}
}

// TestSampleMongoReadsAtOnce: a MongoDB server's readings are current when
// asked, so the sampler does not wait out Config.DatabaseDelay for them (a
// saturated FerretDB needs the whole budget). With 12 s windows and a 3 s
// cap the budget is 3 s, and a delayed reading would come 2 s after the
// window's end (the delay, within two thirds of the budget).
func TestSampleMongoReadsAtOnce(t *testing.T) {
	srv := mongotest.Start(t)
	const delay = 2 * time.Second
	s, err := New(Config{DatabaseURL: srv.URI, DatabaseDelay: delay, MaxSampleTime: 3 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Start(context.Background())
	for i := range 2 {
		end := time.Now()
		w := &window.Window{Index: i, Start: end.Add(-12 * time.Second), End: end, Requests: 1}
		s.Sample(context.Background(), w)
		if d := time.Since(end); d >= delay {
			t.Errorf("window %d: the reading took %v after the window's end, want less than the %v delay", i, d, delay)
		}
		if i == 1 && w.Probes.Database == nil {
			t.Fatalf("no reading; problems: %v", s.Problems())
		}
	}
}

// Over FerretDB's PostgreSQL (as the local provider runs it), each
// collection's reads come from its table's statistics: a filter on an
// unindexed field scans the collection (its documents read per query),
// and once the application creates the index, the same filter reads only
// the documents it matches, through the index FerretDB's PostgreSQL was
// prepared to give it (mongoserver.BackendSetup).
func TestMongoStatsReaderFerretDBBackend(t *testing.T) {
	srv := mongotest.StartFerretDBOverPostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(srv.URI))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Disconnect(context.Background())
	items := c.Database("test").Collection("items")
	docs := make([]any, 2000)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "bucket", Value: i % 100}}
	}
	if _, err := items.InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	r, err := NewMongoStatsReader(srv.URI)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.SetBackend(srv.Backend); err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Ten finds of one bucket (20 documents each), read as a window.
	// PostgreSQL publishes a busy backend's statistics each second, but an
	// idle one's up to ten seconds later: the reading after the finds is
	// retried until their ten reads are in (it would be, in a soak, a
	// window later at most).
	table := func(st PGStats) PGTable {
		for _, tbl := range st.Tables {
			if tbl.Name == "items" {
				return tbl
			}
		}
		return PGTable{}
	}
	reads := func(st PGStats) int64 { return table(st).SeqScans + table(st).IndexScans }
	settled := func(want func(PGStats) bool) (PGStats, MongoTotals) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			st, tot, err := r.ReadTotals(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want(st) || time.Now().After(deadline) {
				return st, tot
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// The inserts' statistics (and FerretDB's reads of the new table) in
	// before the first window.
	st, _ := settled(func(st PGStats) bool { return table(st).LiveRows == 2000 })
	measure := func() *window.Database {
		t.Helper()
		before, tb, err := r.ReadTotals(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for b := range 10 {
			cur, err := items.Find(ctx, bson.D{{Key: "bucket", Value: b}})
			if err != nil {
				t.Fatal(err)
			}
			var got []bson.M
			if err := cur.All(ctx, &got); err != nil || len(got) != 20 {
				t.Fatalf("bucket %d: %d documents (%v), want 20", b, len(got), err)
			}
		}
		after, ta := settled(func(st PGStats) bool { return reads(st) >= reads(before)+10 })
		st = after
		d := DatabaseDelta(before, after, 10)
		MongoDelta(d, tb, ta, 10)
		return d
	}
	items1 := func(d *window.Database) window.Table {
		for _, tbl := range d.Tables {
			if tbl.Name == "items" {
				return tbl
			}
		}
		t.Fatalf("no items in %+v", d.Tables)
		return window.Table{}
	}

	scan := measure()
	it := items1(scan)
	t.Logf("no index: %+v; rows read per request %.1f, absent %v", it, scan.RowsReadPerRequest, scan.Absent)
	if it.LiveRows != 2000 {
		t.Errorf("items: %d documents, want 2000", it.LiveRows)
	}
	if it.SeqScans != 10 || it.SeqTuplesRead != 10*2000 {
		t.Errorf("no index: %d collection scans reading %d documents, want 10 reading 20000", it.SeqScans, it.SeqTuplesRead)
	}
	if scan.RowsReadPerRequest < 2000 {
		t.Errorf("no index: %.1f documents read per request, want ≥ 2000", scan.RowsReadPerRequest)
	}
	for _, a := range []string{window.AbsentDocumentsExamined, window.AbsentCollectionScans} {
		if slices.Contains(scan.Absent, a) {
			t.Errorf("%s is said absent; FerretDB's PostgreSQL gives it", a)
		}
	}

	if _, err := items.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "bucket", Value: 1}}}); err != nil {
		t.Fatal(err)
	}
	// Building the index (and its companion) reads the table: in before
	// the next window.
	settled(func(s PGStats) bool { return table(s).SeqScans > table(st).SeqScans })
	indexed := measure()
	it = items1(indexed)
	t.Logf("index: %+v; rows read per request %.1f", it, indexed.RowsReadPerRequest)
	if it.SeqScans != 0 || it.IndexTuplesFetched != 10*20 {
		t.Errorf("index: %d collection scans, %d documents through an index, want 0 and 200", it.SeqScans, it.IndexTuplesFetched)
	}
	if indexed.RowsReadPerRequest > 25 {
		t.Errorf("index: %.1f documents read per request, want ≤ 25", indexed.RowsReadPerRequest)
	}

	// Dropping the index drops its companion: the finds scan again.
	if err := items.Indexes().DropOne(ctx, "bucket_1"); err != nil {
		t.Fatal(err)
	}
	dropped := measure()
	if it = items1(dropped); it.SeqScans != 10 || it.IndexScans != 0 {
		t.Errorf("index dropped: %d collection scans, %d index scans, want 10 and 0", it.SeqScans, it.IndexScans)
	}
}
