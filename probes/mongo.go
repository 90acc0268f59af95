package probes

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/longhaul-dev/longhaul/window"
)

// MongoStatsReader reads a MongoDB database's statistics into the shape
// PostgreSQL's take (PGStats), so the windows, the collapse rule and the
// reports treat every kind alike:
//
//   - documents per collection: $collStats count, which mongod answers from
//     the collection's metadata (exact after a clean shutdown) and FerretDB
//     over SQLite from the table's leaf cells, without reading a document;
//   - documents read per collection: MongoDB counts documents examined for
//     the whole server only (serverStatus metrics.queryExecutor.scannedObjects)
//     and collection scans per collection ($collStats queryExecStats). A
//     collection scan examines the collection's documents, so the reader
//     gives each collection its scans times its documents (scaled down when
//     the server examined fewer in all: scans that a limit stopped early) as
//     PGTable.SeqTuplesRead and SeqScans, and shares the rest of the
//     documents examined (those found through an index) among collections
//     by their read operations (the top command) as IndexTuplesFetched;
//   - statements: serverStatus opcounters less the reader's own commands;
//     PGStats.TuplesReturned holds the documents examined;
//   - index keys examined and in-memory sorts (serverStatus
//     metrics.queryExecutor.scanned, metrics.operation.scanAndOrder): in
//     MongoTotals, for window.Database.KeysExamined and ScanAndOrder.
//
// FerretDB offers none of the query metrics: MongoTotals.Absent names what
// the server did not answer, and the collections then carry documents only
// — unless the reader knows the PostgreSQL database FerretDB keeps them in
// (SetBackend; the local provider runs FerretDB so): each collection is a
// table there, and its PostgreSQL statistics are its documents (n_live_tup),
// its collection scans and the documents they read (seq_scan,
// seq_tup_read) and the documents read through indexes (idx_scan,
// idx_tup_fetch), exactly, as the PostgreSQL probe reads them.
//
// It is safe for concurrent use (calls are serialised); the driver
// reconnects by itself after a lost connection.
type MongoStatsReader struct {
	uri    string
	dbName string

	mu     sync.Mutex
	client *mongo.Client
	ids    map[string]uint32 // collection → its key in PGStats.Tables
	sent   int64             // commands this reader sent (counted in opcounters.command)
	prev   *mongoRaw         // the previous reading's raw counters
	cum    map[string]*PGTable

	backend     *PGStatsReader    // FerretDB's PostgreSQL database; nil if not known
	backendURL  string            // its DSN, for the collection names
	collections map[string]string // FerretDB's table (schema.table) → collection
	unmapped    map[string]int    // tables of the schema not in the map: times the map was read for them
}

// SetBackend tells the reader the PostgreSQL database (a postgres:// DSN)
// that the server, a FerretDB, keeps its collections in. Call it before the
// first reading.
func (r *MongoStatsReader) SetBackend(dsn string) error {
	b, err := NewPGStatsReader(dsn)
	if err != nil {
		return err
	}
	r.backend, r.backendURL, r.collections, r.unmapped = b, dsn, map[string]string{}, map[string]int{}
	return nil
}

// MongoTotals is what a MongoDB reading holds beyond PGStats: cumulative
// counters of the whole server, and the readings it does not offer.
type MongoTotals struct {
	KeysExamined int64
	ScanAndOrder int64
	Absent       []string
}

// NewMongoStatsReader returns a reader for the database named in rawURL's
// path (mongodb:// or mongodb+srv://). It does not connect.
func NewMongoStatsReader(rawURL string) (*MongoStatsReader, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "mongodb" && u.Scheme != "mongodb+srv") {
		return nil, fmt.Errorf("database probe: %q is not a mongodb:// URL", redactURL(rawURL))
	}
	name := strings.TrimPrefix(u.Path, "/")
	if name == "" {
		return nil, fmt.Errorf("database probe: mongodb URL %q names no database", u.Redacted())
	}
	return &MongoStatsReader{uri: rawURL, dbName: name, ids: map[string]uint32{}, cum: map[string]*PGTable{}}, nil
}

func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// mongoRaw is one reading's raw counters.
type mongoRaw struct {
	docs         map[string]int64 // collection → documents
	collScans    map[string]int64 // collection → collection scans (queryExecStats)
	readOps      map[string]int64 // collection → read operations (top)
	hasCollScans bool
	hasTop       bool

	docsExamined, keysExamined, scanAndOrder int64
	hasDocsExamined, hasKeysExamined         bool
	hasScanAndOrder                          bool
	ops                                      int64 // opcounters' sum
	hasOps                                   bool
}

// Read takes one reading.
func (r *MongoStatsReader) Read(ctx context.Context) (PGStats, error) {
	st, _, err := r.ReadTotals(ctx)
	return st, err
}

// ReadTotals takes one reading and returns MongoTotals too.
func (r *MongoStatsReader) ReadTotals(ctx context.Context) (PGStats, MongoTotals, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.client == nil {
		c, err := mongo.Connect(options.Client().ApplyURI(r.uri).
			SetAppName(ApplicationName).SetMaxPoolSize(1).
			SetServerSelectionTimeout(5 * time.Second).SetConnectTimeout(5 * time.Second))
		if err != nil {
			return PGStats{}, MongoTotals{}, fmt.Errorf("database probe: %w", err)
		}
		r.client = c
	}
	if r.backend != nil {
		return r.readBackend(ctx)
	}
	raw, err := r.readRaw(ctx)
	if err != nil {
		return PGStats{}, MongoTotals{}, fmt.Errorf("database probe: %w", err)
	}
	st, tot := r.account(raw)
	return st, tot, nil
}

// readBackend reads a FerretDB's collections from its PostgreSQL tables'
// statistics, and its operations from serverStatus.
func (r *MongoStatsReader) readBackend(ctx context.Context) (PGStats, MongoTotals, error) {
	pg, err := r.backend.Read(ctx)
	if err != nil {
		return PGStats{}, MongoTotals{}, err
	}
	// A table of the database's schema not yet known is most likely a new
	// collection: the map is read again, three times at most for the same
	// table (one FerretDB keeps for itself is never a collection).
	schema := r.dbName + "."
	reload := false
	for _, t := range pg.Tables {
		if _, known := r.collections[t.Name]; !known && strings.HasPrefix(t.Name, schema) && r.unmapped[t.Name] < 3 {
			r.unmapped[t.Name]++
			reload = true
		}
	}
	if reload {
		if err := r.loadCollections(ctx); err != nil {
			return PGStats{}, MongoTotals{}, fmt.Errorf("database probe: %w", err)
		}
	}
	st := PGStats{Tables: map[uint32]PGTable{}}
	for _, t := range pg.Tables {
		name, ok := r.collections[t.Name]
		if !ok {
			continue // FerretDB's own tables, or a collection created since
		}
		t.Name = name
		st.Tables[r.id(name)] = t
		st.TuplesReturned += t.SeqTuplesRead + t.IndexTuplesFetched
	}
	tot := MongoTotals{Absent: []string{window.AbsentKeysExamined, window.AbsentScanAndOrder}}
	r.sent++
	if status, err := r.client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw(); err == nil {
		if ops, has := opcounters(status); has {
			st.Statements = ops - r.sent
		}
	}
	return st, tot, nil
}

// ferretDBMetadataTable is the table FerretDB 1.x keeps in each database's
// schema that maps collections to tables.
const ferretDBMetadataTable = "_ferretdb_database_metadata"

// loadCollections reads which table holds which collection from FerretDB's
// metadata table, over a connection of its own (it is read once per new
// collection, not per reading).
func (r *MongoStatsReader) loadCollections(ctx context.Context) error {
	conn, err := pgx.Connect(ctx, r.backendURL)
	if err != nil {
		return fmt.Errorf("read FerretDB's collections: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT _jsonb->>'table', _jsonb->>'_id' FROM `+pgx.Identifier{r.dbName, ferretDBMetadataTable}.Sanitize())
	if err != nil {
		return fmt.Errorf("read FerretDB's collections: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, coll string
		if err := rows.Scan(&table, &coll); err != nil {
			return fmt.Errorf("read FerretDB's collections: %w", err)
		}
		r.collections[r.dbName+"."+table] = coll
	}
	return rows.Err()
}

// id is the collection's key in PGStats.Tables, the same in every reading.
func (r *MongoStatsReader) id(name string) uint32 {
	id, ok := r.ids[name]
	if !ok {
		id = uint32(len(r.ids) + 1)
		r.ids[name] = id
	}
	return id
}

func (r *MongoStatsReader) readRaw(ctx context.Context) (mongoRaw, error) {
	raw := mongoRaw{docs: map[string]int64{}, collScans: map[string]int64{}, readOps: map[string]int64{}}
	db := r.client.Database(r.dbName)
	r.sent++
	names, err := db.ListCollectionNames(ctx, bson.D{{Key: "type", Value: "collection"}})
	if err != nil {
		return raw, fmt.Errorf("list collections: %w", err)
	}
	names = slices.DeleteFunc(names, func(n string) bool { return strings.HasPrefix(n, "system.") })
	slices.Sort(names)
	raw.hasCollScans = len(names) > 0
	for _, name := range names {
		docs, scans, hasScans, err := r.collStats(ctx, db, name)
		if err != nil {
			return raw, err
		}
		raw.docs[name] = docs
		raw.collScans[name] = scans
		raw.hasCollScans = raw.hasCollScans && hasScans
	}

	var status bson.Raw
	r.sent++
	if status, err = r.client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Raw(); err != nil {
		return raw, fmt.Errorf("serverStatus: %w", err)
	}
	raw.docsExamined, raw.hasDocsExamined = rawInt(status, "metrics", "queryExecutor", "scannedObjects")
	raw.keysExamined, raw.hasKeysExamined = rawInt(status, "metrics", "queryExecutor", "scanned")
	raw.scanAndOrder, raw.hasScanAndOrder = rawInt(status, "metrics", "operation", "scanAndOrder")
	raw.ops, raw.hasOps = opcounters(status)

	if raw.hasDocsExamined {
		// Per-collection read operations, to share the documents found
		// through indexes (top is mongod's; FerretDB has neither).
		r.sent++
		top, err := r.client.Database("admin").RunCommand(ctx, bson.D{{Key: "top", Value: 1}}).Raw()
		if err == nil {
			raw.hasTop = true
			for _, name := range names {
				ns := r.dbName + "." + name
				var n int64
				for _, op := range []string{"queries", "getmore"} {
					v, _ := rawInt(top, "totals", ns, op, "count")
					n += v
				}
				raw.readOps[name] = n
			}
		}
	}
	return raw, nil
}

// collStats reads one collection's documents and collection scans.
func (r *MongoStatsReader) collStats(ctx context.Context, db *mongo.Database, name string) (docs, scans int64, hasScans bool, err error) {
	r.sent++
	cur, err := db.Collection(name).Aggregate(ctx, mongo.Pipeline{
		{{Key: "$collStats", Value: bson.D{{Key: "count", Value: bson.D{}}, {Key: "queryExecStats", Value: bson.D{}}}}},
	})
	if err != nil {
		return 0, 0, false, fmt.Errorf("$collStats of %s: %w", name, err)
	}
	defer cur.Close(ctx)
	for cur.Next(ctx) {
		// A sharded collection gives a document per shard: sum them.
		n, _ := rawInt(cur.Current, "count")
		docs += n
		if s, ok := rawInt(cur.Current, "queryExecStats", "collectionScans", "total"); ok {
			scans += s
			hasScans = true
		}
	}
	if err := cur.Err(); err != nil {
		return 0, 0, false, fmt.Errorf("$collStats of %s: %w", name, err)
	}
	return docs, scans, hasScans, nil
}

// account turns a raw reading into PGStats, adding this reading's share of
// the documents examined since the previous one to each collection's
// cumulative counters.
func (r *MongoStatsReader) account(raw mongoRaw) (PGStats, MongoTotals) {
	st := PGStats{Tables: make(map[uint32]PGTable, len(raw.docs)), TuplesReturned: raw.docsExamined}
	if raw.hasOps {
		st.Statements = raw.ops - r.sent
	}
	tot := MongoTotals{KeysExamined: raw.keysExamined, ScanAndOrder: raw.scanAndOrder}
	for _, a := range []struct {
		has  bool
		name string
	}{
		{raw.hasDocsExamined, window.AbsentDocumentsExamined},
		{raw.hasKeysExamined, window.AbsentKeysExamined},
		{raw.hasCollScans, window.AbsentCollectionScans},
		{raw.hasScanAndOrder, window.AbsentScanAndOrder},
	} {
		if !a.has {
			tot.Absent = append(tot.Absent, a.name)
		}
	}
	if p := r.prev; p != nil && raw.hasDocsExamined && raw.hasCollScans {
		seq, idx := shareExamined(p, &raw)
		for name, n := range seq {
			r.table(name).SeqTuplesRead += n
		}
		for name, n := range idx {
			r.table(name).IndexTuplesFetched += n
		}
	}
	r.prev = &raw
	for name, docs := range raw.docs {
		t := r.table(name)
		t.LiveRows = docs
		t.SeqScans = raw.collScans[name]
		st.Tables[r.id(name)] = *t
	}
	return st, tot
}

func (r *MongoStatsReader) table(name string) *PGTable {
	t := r.cum[name]
	if t == nil {
		t = &PGTable{Name: name}
		r.cum[name] = t
	}
	return t
}

// shareExamined shares the documents examined between two readings among
// collections: by collection scans (each examines the collection's
// documents, fewer in all when a limit stopped scans early) and, for what
// is left (documents found through indexes), by read operations.
func shareExamined(prev, cur *mongoRaw) (seq, idx map[string]int64) {
	examined := counterDelta(prev.docsExamined, cur.docsExamined)
	seq, idx = map[string]int64{}, map[string]int64{}
	est := map[string]float64{}
	var sum float64
	for name, scans := range cur.collScans {
		d := counterDelta(prev.collScans[name], scans)
		if d > 0 {
			// The documents at the end of the interval: the collection's
			// size when the scans ran is not known closer than that.
			est[name] = float64(d) * float64(cur.docs[name])
			sum += est[name]
		}
	}
	scale := 1.0
	if sum > float64(examined) {
		scale = float64(examined) / sum
	}
	var scanned int64
	for name, e := range est {
		n := int64(e*scale + 0.5)
		seq[name] = n
		scanned += n
	}
	rest := examined - scanned
	if rest <= 0 || !cur.hasTop {
		return seq, idx
	}
	ops := map[string]int64{}
	var all int64
	for name, n := range cur.readOps {
		if d := counterDelta(prev.readOps[name], n); d > 0 {
			ops[name] = d
			all += d
		}
	}
	for name, d := range ops {
		idx[name] = rest * d / all
	}
	return seq, idx
}

// MongoDelta adds to d (DatabaseDelta's) what the server's counters in prev
// and cur (two consecutive readings) say about the window: index keys
// examined (per request too), in-memory sorts, documents examined per
// request, the kind, and the readings the server does not offer.
func MongoDelta(d *window.Database, prev, cur MongoTotals, requests int64) {
	if d == nil {
		return
	}
	d.Kind, d.Absent = window.DatabaseMongoDB, cur.Absent
	d.KeysExamined = counterDelta(prev.KeysExamined, cur.KeysExamined)
	d.ScanAndOrder = counterDelta(prev.ScanAndOrder, cur.ScanAndOrder)
	if requests > 0 {
		d.KeysExaminedPerRequest = float64(d.KeysExamined) / float64(requests)
		// The server's own count of documents examined, rather than the
		// collections' shares of it, which leave out what top could not
		// place.
		if !slices.Contains(cur.Absent, window.AbsentDocumentsExamined) {
			d.RowsReadPerRequest = float64(d.TuplesReturned) / float64(requests)
		}
	}
}

// opcounters sums serverStatus's operation counters; has is false when the
// server gives none.
func opcounters(status bson.Raw) (ops int64, has bool) {
	for _, op := range []string{"insert", "query", "update", "delete", "getmore", "command"} {
		n, ok := rawInt(status, "opcounters", op)
		ops += n
		has = has || ok
	}
	return ops, has
}

// rawInt reads the integer at path in doc, whatever its BSON number type.
func rawInt(doc bson.Raw, path ...string) (int64, bool) {
	v, err := doc.LookupErr(path...)
	if err != nil {
		return 0, false
	}
	switch v.Type {
	case bson.TypeInt32:
		return int64(v.Int32()), true
	case bson.TypeInt64:
		return v.Int64(), true
	case bson.TypeDouble:
		return int64(v.Double()), true
	}
	return 0, false
}

// Close disconnects.
func (r *MongoStatsReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var err error
	if r.backend != nil {
		err = r.backend.Close()
	}
	if r.client == nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	derr := r.client.Disconnect(ctx)
	r.client = nil
	if errors.Is(derr, mongo.ErrClientDisconnected) {
		derr = nil
	}
	return errors.Join(err, derr)
}
