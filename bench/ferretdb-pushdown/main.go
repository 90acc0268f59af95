// Command ferretdb-pushdown is the client half of bench/ferretdb-pushdown/run.sh:
// against a MongoDB-protocol server (FerretDB over PostgreSQL) it builds the
// demo target's items collection with its list index, fills it, and sends
// the demo's queries (by _id; the list: a bucket filter, newest first,
// limit 20) with the bucket as a number and as a string, each with its name
// as the query's comment, which FerretDB writes into its SQL. run.sh reads
// what FerretDB made of them from PostgreSQL's own log (auto_explain: each
// statement's SQL, parameters and plan), and runs ANALYZE between the steps.
//
//	ferretdb-pushdown -mongo mongodb://127.0.0.1:PORT/pushdown -step fill -docs 20000
//	ferretdb-pushdown -mongo mongodb://127.0.0.1:PORT/pushdown -step query
//
// With COMPANION=1, run.sh first prepares FerretDB's PostgreSQL database as
// the local provider does (mongoserver.BackendSetup: a GIN companion for
// each index FerretDB creates), through this command's backend step:
//
//	ferretdb-pushdown -pg postgres://postgres@127.0.0.1:PORT/ferretdb -step backend
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/longhaul-dev/longhaul/internal/mongoserver"
)

func main() {
	uri := flag.String("mongo", "", "the server's mongodb:// URL (its path names the database)")
	step := flag.String("step", "", "fill (create the collection, its indexes and documents) or query")
	docs := flag.Int("docs", 20000, "documents to insert into items (fill)")
	pg := flag.String("pg", "", "FerretDB's PostgreSQL database (backend)")
	flag.Parse()
	if *step == "backend" && *pg != "" {
		if err := backend(*pg); err != nil {
			fmt.Fprintln(os.Stderr, "ferretdb-pushdown:", err)
			os.Exit(1)
		}
		return
	}
	if *uri == "" || (*step != "fill" && *step != "query") || *docs < 100 {
		fmt.Fprintln(os.Stderr, "ferretdb-pushdown: -mongo URL, -step fill|query and -docs ≥ 100 are needed")
		os.Exit(2)
	}
	if err := run(*uri, *step, *docs); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb-pushdown:", err)
		os.Exit(1)
	}
}

func run(uri, step string, n int) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := mongo.Connect(options.Client().ApplyURI(uri))
	if err != nil {
		return err
	}
	defer c.Disconnect(context.Background())
	items := c.Database("pushdown").Collection("items")
	if step == "query" {
		return query(ctx, items)
	}
	// The demo's list index (examples/demo-target/store_mongo.go).
	if _, err := items.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys:    bson.D{{Key: "bucket", Value: 1}, {Key: "created_at", Value: 1}, {Key: "_id", Value: 1}},
		Options: options.Index().SetName("items_bucket_created_at_idx"),
	}); err != nil {
		return fmt.Errorf("create index: %w", err)
	}
	// A single-field index too, the simplest shape an index can have.
	if _, err := items.Indexes().CreateOne(ctx, mongo.IndexModel{
		Keys: bson.D{{Key: "bucket", Value: 1}}, Options: options.Index().SetName("items_bucket_idx"),
	}); err != nil {
		return fmt.Errorf("create index: %w", err)
	}
	const batch = 1000
	base := time.Now().UnixMicro()
	for first := 0; first < n; first += batch {
		var docs []any
		for i := first; i < min(first+batch, n); i++ {
			docs = append(docs, bson.D{{Key: "_id", Value: int64(i + 1)}, {Key: "bucket", Value: int64(i % 100)},
				{Key: "title", Value: fmt.Sprintf("item %d", i)}, {Key: "created_at", Value: base + int64(i)}})
		}
		if _, err := items.InsertMany(ctx, docs); err != nil {
			return fmt.Errorf("insert: %w", err)
		}
	}
	fmt.Println("inserted", n, "documents")
	return nil
}

func query(ctx context.Context, items *mongo.Collection) error {
	newest := bson.D{{Key: "created_at", Value: -1}, {Key: "_id", Value: -1}}
	queries := []struct {
		name   string
		filter bson.D
		opts   *options.FindOptionsBuilder
	}{
		{"get by _id", bson.D{{Key: "_id", Value: int64(100)}}, options.Find()},
		{"list: bucket as a number, newest first, limit 20", bson.D{{Key: "bucket", Value: int64(7)}}, options.Find().SetSort(newest).SetLimit(20)},
		{"bucket as a number, no sort, no limit", bson.D{{Key: "bucket", Value: int64(7)}}, options.Find()},
		{"bucket with $eq", bson.D{{Key: "bucket", Value: bson.D{{Key: "$eq", Value: int64(7)}}}}, options.Find()},
		{"bucket as a string", bson.D{{Key: "bucket", Value: "7"}}, options.Find()},
	}
	for _, q := range queries {
		start := time.Now()
		cur, err := items.Find(ctx, q.filter, q.opts.SetComment(q.name))
		if err != nil {
			return fmt.Errorf("%s: %w", q.name, err)
		}
		var got []bson.Raw
		if err := cur.All(ctx, &got); err != nil {
			return fmt.Errorf("%s: %w", q.name, err)
		}
		fmt.Printf("query %-50s %5d documents in %7.1f ms\n", q.name+":", len(got), float64(time.Since(start).Microseconds())/1000)
	}
	return nil
}

// backend prepares FerretDB's PostgreSQL database as the local provider does.
func backend(pgURL string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	for _, stmt := range mongoserver.BackendSetup(conn.Config().Database) {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("backend setup: %w", err)
		}
	}
	return nil
}
