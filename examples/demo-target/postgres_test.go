package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/longhaul-dev/longhaul/internal/pgtest"
)

var testLog = slog.New(slog.DiscardHandler)

// pgCluster starts one private PostgreSQL cluster per test (skipped when the
// server binaries are absent) and returns a function that opens a fresh
// database in it as a store.
func pgCluster(t *testing.T) func(t *testing.T, indexBucket bool) (*pgStore, string) {
	dsn := pgtest.Start(t)
	return func(t *testing.T, indexBucket bool) (*pgStore, string) {
		t.Helper()
		db := pgtest.NewDatabase(t, dsn)
		st, err := openPostgres(context.Background(), db, indexBucket, testLog)
		if err != nil {
			t.Fatalf("open PostgreSQL: %v", err)
		}
		t.Cleanup(st.close)
		return st, db
	}
}

func TestAPIPostgres(t *testing.T) {
	open := pgCluster(t)
	testAPI(t, func(t *testing.T) store { st, _ := open(t, true); return st })
}

// TestListQueryCostPostgres shows what DEMO_INDEX_BUCKET=false does to the list
// query: without the index PostgreSQL reads every row of items (a Seq Scan), so
// the rows it reads grow with the table; with it, an index scan reads about
// LIMIT rows whatever the size.
func TestListQueryCostPostgres(t *testing.T) {
	open := pgCluster(t)
	const buckets, limit = 100, 20
	sizes := []int{2_000, 20_000}

	tests := []struct {
		name        string
		indexBucket bool
		wantNode    string // plan node reading items (a small table may get a Bitmap Heap Scan)
		wantIndex   string // index used anywhere in the plan
		// rowsRead reports whether rows read at each size are acceptable.
		rowsRead func(size int, read float64) bool
	}{
		{
			name: "without index", indexBucket: false, wantNode: "Seq Scan",
			rowsRead: func(size int, read float64) bool { return read >= float64(size) },
		},
		{
			name: "with index", indexBucket: true, wantNode: "Scan", wantIndex: "items_bucket_created_at_idx",
			rowsRead: func(size int, read float64) bool { return read <= 2*limit },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, _ := open(t, tt.indexBucket)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			owner, err := st.createUser(ctx, "seed", []byte("x"), now())
			if err != nil {
				t.Fatal(err)
			}
			have := 0
			var reads []float64
			for _, size := range sizes {
				seedItems(t, st, owner, have, size, buckets)
				have = size
				for _, mode := range []string{"force_custom_plan", "force_generic_plan"} {
					p := explainList(t, st, mode, 42, limit)
					t.Logf("%d rows, %s: %s on items reads %.0f rows, %.2f ms", size, mode, p.node, p.rowsRead, p.ms)
					if !strings.Contains(p.node, tt.wantNode) || (tt.indexBucket && strings.Contains(p.node, "Seq Scan")) {
						t.Errorf("%d rows, %s: plan reads items with %q, want %q", size, mode, p.node, tt.wantNode)
					}
					if p.index != tt.wantIndex {
						t.Errorf("%d rows, %s: plan uses index %q, want %q", size, mode, p.index, tt.wantIndex)
					}
					if !tt.rowsRead(size, p.rowsRead) {
						t.Errorf("%d rows, %s: the scan read %.0f rows", size, mode, p.rowsRead)
					}
					if p.returned != limit {
						t.Errorf("%d rows, %s: query returned %d rows, want %d", size, mode, p.returned, limit)
					}
					if mode == "force_generic_plan" {
						reads = append(reads, p.rowsRead)
					}
				}
			}
			growth := reads[1] / reads[0]
			if tt.indexBucket && growth > 1.5 {
				t.Errorf("with the index, rows read grew %.1f× from %d to %d rows; want flat", growth, sizes[0], sizes[1])
			}
			if !tt.indexBucket && growth < 5 {
				t.Errorf("without the index, rows read grew %.1f× from %d to %d rows; want ≥ 5×", growth, sizes[0], sizes[1])
			}
		})
	}
}

// seedItems grows items from have to size rows, spread over buckets, with
// increasing created_at, then refreshes the planner's statistics.
func seedItems(t *testing.T, st *pgStore, owner int64, have, size, buckets int) {
	t.Helper()
	ctx := context.Background()
	_, err := st.pool.Exec(ctx, `INSERT INTO items (bucket, title, owner, payload, created_at, updated_at)
SELECT i % $1, 'item ' || i, $2, jsonb_build_object('i', i, 'pad', repeat('x', 100)),
       now() + i * interval '1 millisecond', now() + i * interval '1 millisecond'
FROM generate_series($3::int + 1, $4::int) AS i`, buckets, owner, have, size)
	if err != nil {
		t.Fatalf("seed items: %v", err)
	}
	if _, err := st.pool.Exec(ctx, `ANALYZE items`); err != nil {
		t.Fatalf("analyze items: %v", err)
	}
}

type listPlan struct {
	node, index string
	rowsRead    float64
	returned    int
	ms          float64
}

// explainList runs EXPLAIN ANALYZE of the server's own list query (as a
// custom or a generic plan, as pgx's cached prepared statements may get
// either) and returns the plan node that reads items.
func explainList(t *testing.T, st *pgStore, planCacheMode string, bucket, limit int) listPlan {
	t.Helper()
	ctx := context.Background()
	conn, err := st.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET plan_cache_mode = `+planCacheMode); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(ctx, `RESET plan_cache_mode`)
	var out []byte
	err = conn.QueryRow(ctx, `EXPLAIN (ANALYZE, FORMAT JSON) `+listByBucketSQL, pgx.QueryExecModeExec, bucket, limit).Scan(&out)
	if err != nil {
		t.Fatalf("explain list query: %v", err)
	}
	var plans []struct {
		Plan          planNode `json:"Plan"`
		ExecutionTime float64  `json:"Execution Time"`
	}
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("decode plan %s: %v", out, err)
	}
	scan := plans[0].Plan.find("items")
	if scan == nil {
		t.Fatalf("no plan node reads items:\n%s", out)
	}
	return listPlan{
		node:     scan.NodeType,
		index:    plans[0].Plan.indexUsed(),
		rowsRead: (scan.ActualRows + scan.RowsRemovedByFilter) * scan.ActualLoops,
		returned: int(plans[0].Plan.ActualRows),
		ms:       plans[0].ExecutionTime,
	}
}

type planNode struct {
	NodeType            string     `json:"Node Type"`
	RelationName        string     `json:"Relation Name"`
	IndexName           string     `json:"Index Name"`
	ActualRows          float64    `json:"Actual Rows"`
	ActualLoops         float64    `json:"Actual Loops"`
	RowsRemovedByFilter float64    `json:"Rows Removed by Filter"`
	Plans               []planNode `json:"Plans"`
}

func (n *planNode) find(relation string) *planNode {
	if n.RelationName == relation {
		return n
	}
	for i := range n.Plans {
		if f := n.Plans[i].find(relation); f != nil {
			return f
		}
	}
	return nil
}

// indexUsed returns the first index any node of the plan scans.
func (n *planNode) indexUsed() string {
	if n.IndexName != "" {
		return n.IndexName
	}
	for i := range n.Plans {
		if ix := n.Plans[i].indexUsed(); ix != "" {
			return ix
		}
	}
	return ""
}

func (n planNode) String() string { return fmt.Sprintf("%s on %s", n.NodeType, n.RelationName) }
