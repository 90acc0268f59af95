package probes

import (
	"context"
	"database/sql"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/longhaul-dev/longhaul/internal/mysqltest"
	"github.com/longhaul-dev/longhaul/window"
)

func TestMySQLDSN(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: "mysql://app:p%40ss@127.0.0.1:3307/shop", want: "app:p@ss@tcp(127.0.0.1:3307)/shop?timeout=5s"},
		{in: "mariadb://app:pw@127.0.0.1:3307/shop", want: "app:pw@tcp(127.0.0.1:3307)/shop?timeout=5s"},
		{in: "app:pw@tcp(127.0.0.1:3307)/shop?parseTime=true", want: "app:pw@tcp(127.0.0.1:3307)/shop?parseTime=true"},
		{in: "mysql://app:pw@127.0.0.1:3307/", wantErr: "names no database"},
		{in: "app:pw@tcp(127.0.0.1:3307)/", wantErr: "names no database"},
	}
	for _, tt := range tests {
		got, err := MySQLDSN(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("MySQLDSN(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("MySQLDSN(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := newDatabaseReader("mariadb://u:p@127.0.0.1:1/db", ""); err != nil {
		t.Errorf("a mariadb:// URL: %v", err)
	}
	if r, _ := newDatabaseReader("postgres://u@127.0.0.1/db", ""); r == nil {
		t.Error("a postgres:// URL gave no reader")
	}
}

// TestMySQLStatsReader reads a real MariaDB: rows per table without touching
// the tables, rows read by full scans apart from rows read through an index,
// and statements counted without the probe's own.
func TestMySQLStatsReader(t *testing.T) {
	srv := mysqltest.StartServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := sql.Open("mysql", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TABLE items (id BIGINT PRIMARY KEY AUTO_INCREMENT, bucket INT NOT NULL, title VARCHAR(40)) ENGINE=InnoDB`)
	exec(`CREATE TABLE users (id BIGINT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(40)) ENGINE=InnoDB`)
	for i := 0; i < 200; i++ {
		exec(`INSERT INTO items (bucket, title) VALUES (?, 'x')`, i%10)
	}
	exec(`INSERT INTO users (name) VALUES ('a'), ('b')`)

	// The reader is given the URL form the providers hand out.
	c, _ := mysql.ParseDSN(srv.DSN)
	u := url.URL{Scheme: "mariadb", User: url.UserPassword(c.User, c.Passwd), Host: c.Addr, Path: "/" + c.DBName}
	r, err := NewMySQLStatsReader(u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	prev, err := r.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// 5 full scans of items (no index on bucket: 200 rows each), 3 lookups
	// by primary key.
	const scans, lookups = 5, 3
	for i := 0; i < scans; i++ {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT COUNT(title) FROM items WHERE bucket = ?`, i).Scan(&n); err != nil || n != 20 {
			t.Fatalf("scan: %d, %v", n, err)
		}
	}
	for i := 1; i <= lookups; i++ {
		var title string
		if err := db.QueryRowContext(ctx, `SELECT title FROM items WHERE id = ?`, i).Scan(&title); err != nil {
			t.Fatal(err)
		}
	}
	cur, err := r.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := DatabaseDelta(prev, cur, 10)
	items := findTable(d, "items")
	if items.LiveRows != 200 {
		t.Errorf("items rows = %d, want 200", items.LiveRows)
	}
	if got, want := items.SeqTuplesRead, int64(scans*200); got != want {
		t.Errorf("items rows read by full scans = %d, want %d", got, want)
	}
	if got, want := items.IndexTuplesFetched, int64(lookups); got != want {
		t.Errorf("items rows read through an index = %d, want %d", got, want)
	}
	if got := findTable(d, "users"); got.LiveRows != 2 || got.SeqTuplesRead != 0 {
		t.Errorf("users = %+v, want 2 rows and none read", got)
	}
	if got, want := d.Statements, int64(scans+lookups); got != want {
		t.Errorf("statements = %d, want %d (the probe's own left out)", got, want)
	}
	if got, want := d.StatementsPerRequest, float64(scans+lookups)/10; got != want {
		t.Errorf("statements per request = %v, want %v", got, want)
	}
	if got, want := d.RowsReadPerRequest, float64(scans*200+lookups)/10; got != want {
		t.Errorf("rows read per request = %v, want %v", got, want)
	}
}

// TestSamplerMySQL: a mysql:// DatabaseURL gives the database probe, and its
// windows carry the tables.
func TestSamplerMySQL(t *testing.T) {
	srv := mysqltest.StartServer(t)
	c, _ := mysql.ParseDSN(srv.DSN)
	u := url.URL{Scheme: "mysql", User: url.UserPassword(c.User, c.Passwd), Host: c.Addr, Path: "/" + c.DBName}
	db, err := sql.Open("mysql", srv.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE TABLE items (id INT PRIMARY KEY, v INT)`); err != nil {
		t.Fatal(err)
	}
	s := startSampler(t, Config{DatabaseURL: u.String(), DatabaseDelay: -1, MaxSampleTime: 5 * time.Second, Logger: slog.New(slog.DiscardHandler)})
	for i := 0; i < 2; i++ {
		if _, err := db.Exec(`INSERT INTO items VALUES (?, 1)`, i); err != nil {
			t.Fatal(err)
		}
		w := &window.Window{Index: i, Requests: 1, Start: time.Now().Add(-time.Second), End: time.Now()}
		s.Sample(context.Background(), w)
		if w.Probes.Database == nil {
			t.Fatalf("window %d: no database reading; problems: %v", i, s.Problems())
		}
		if got := findTable(w.Probes.Database, "items").LiveRows; got != int64(i+1) {
			t.Errorf("window %d: items rows = %d, want %d", i, got, i+1)
		}
	}
}
