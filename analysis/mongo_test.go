package analysis

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/window"
)

// listSlowsWithItems is the demo without its list index: list slows as
// items grows, the other ops stay flat, throughput falls.
func listSlowsWithItems() []window.Window {
	return opWindows(func(op string, i int) float64 {
		if op == "list" {
			return 8 * (1 + 0.3*float64(i))
		}
		return map[string]float64{"create": 6, "get": 3}[op] * (1 + 0.02*math.Sin(float64(i)))
	}, func(i int) float64 { return 2000 / (1 + 0.1*float64(i)) })
}

// A MongoDB-protocol server that counts documents but not the documents its
// queries read (FerretDB): the op that slowed with a growing collection
// names it, in MongoDB's words, and missing_evidence says which readings
// the server does not offer.
func TestCollapseNamesTheCollectionFromCountsOnly(t *testing.T) {
	ws := listSlowsWithItems()
	absent := []string{window.AbsentDocumentsExamined, window.AbsentKeysExamined, window.AbsentCollectionScans, window.AbsentScanAndOrder}
	for i := range ws {
		ws[i].Probes.Database = &window.Database{Kind: window.DatabaseMongoDB, Absent: absent, Tables: []window.Table{
			{Name: "items", LiveRows: int64(2000 + 1000*i)}, {Name: "sessions", LiveRows: int64(20 + 100*i)}, {Name: "users", LiveRows: 16},
		}}
	}
	res := Analyze(ws, DefaultOptions())
	f, ok := find(res, KindCollapse)
	if !ok || f.Severity != Critical || f.Evidence.Table != "items" || f.Evidence.Op != "list" {
		t.Fatalf("want a critical collapse naming items and list; got %s", describe(res))
	}
	for _, s := range []string{"as items grew", " documents", "list slowed in step with items", "no document-read statistics from the database server", "index missing"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, f.Summary)
		}
	}
	m, ok := find(res, KindMissingEvidence)
	if !ok || !slices.Contains(m.Evidence.Missing, window.AbsentDocumentsExamined) || slices.Contains(m.Evidence.Missing, MissingDatabase) ||
		!strings.Contains(m.Summary, "does not offer documents examined") {
		t.Errorf("want missing_evidence naming documents examined (and not the database probe); got %s", describe(res))
	}
}

// A MongoDB server with its query metrics (mongod): documents read per
// request by collection scans on items grow with it, and the finding says
// so in MongoDB's words.
func TestCollapseNamesTheCollectionFromDocumentsRead(t *testing.T) {
	ws := listSlowsWithItems()
	for i := range ws {
		docs := int64(2000 + 1000*i)
		// A fifth of the requests list, each scanning the whole collection.
		scans := ws[i].Requests / 5
		ws[i].Probes.Database = &window.Database{Kind: window.DatabaseMongoDB, Tables: []window.Table{
			{Name: "items", LiveRows: docs, SeqScans: scans, SeqTuplesRead: scans * docs, IndexTuplesFetched: ws[i].Requests / 5},
			{Name: "users", LiveRows: 16, IndexTuplesFetched: ws[i].Requests / 100},
		}}
	}
	res := Analyze(ws, DefaultOptions())
	f, ok := find(res, KindCollapse)
	if !ok || f.Severity != Critical || f.Evidence.Table != "items" {
		t.Fatalf("want a critical collapse naming items; got %s", describe(res))
	}
	for _, s := range []string{"collection scans on items read", "documents per request", "as items grew", "missing an index"} {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary lacks %q: %s", s, f.Summary)
		}
	}
	if m, ok := find(res, KindMissingEvidence); ok && slices.ContainsFunc(m.Evidence.Missing, func(s string) bool { return s == MissingDatabase || s == window.AbsentDocumentsExamined }) {
		t.Errorf("the database readings are all there; got %s", describe(res))
	}
}
