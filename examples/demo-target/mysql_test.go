package main

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/longhaul-dev/longhaul/internal/mysqltest"
)

// mysqlServer starts one private MariaDB (or MySQL) server per test (skipped
// when none is installed) and returns a function that opens a fresh
// database in it as a store.
func mysqlServer(t *testing.T) func(t *testing.T, indexBucket bool) (*mysqlStore, string) {
	srv := mysqltest.StartServer(t)
	admin, err := sql.Open("mysql", srv.AdminDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	var seq atomic.Int64
	return func(t *testing.T, indexBucket bool) (*mysqlStore, string) {
		t.Helper()
		name := fmt.Sprintf("demo%d", seq.Add(1))
		for _, q := range []string{"CREATE DATABASE " + name, "GRANT ALL PRIVILEGES ON " + name + ".* TO 'test'@'%'"} {
			if _, err := admin.Exec(q); err != nil {
				t.Fatal(err)
			}
		}
		url := fmt.Sprintf("mariadb://test:test@127.0.0.1:%d/%s", srv.Port, name)
		st, err := openMySQL(context.Background(), url, indexBucket, testLog)
		if err != nil {
			t.Fatalf("open MySQL: %v", err)
		}
		t.Cleanup(st.close)
		return st, url
	}
}

func TestMySQLStore(t *testing.T) {
	open := mysqlServer(t)
	t.Run("api", func(t *testing.T) {
		testAPI(t, func(t *testing.T) store { st, _ := open(t, true); return st })
	})
	// DEMO_INDEX_BUCKET=false on MySQL: the list query reads the whole table
	// (access type ALL); with the indexes it uses one of them. Opening the
	// same database again with the other setting adds or drops them.
	t.Run("list query plan", func(t *testing.T) {
		st, url := open(t, false)
		plan := func(st *mysqlStore) (access, key string) {
			t.Helper()
			rows, err := st.db.Query("EXPLAIN "+mysqlListByBucket, 3, 20)
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			cols, _ := rows.Columns()
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if !rows.Next() {
				t.Fatal("EXPLAIN returned nothing")
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, c := range cols {
				switch c {
				case "type":
					access = vals[i].String
				case "key":
					key = vals[i].String
				}
			}
			return access, key
		}
		if access, key := plan(st); access != "ALL" || key != "" {
			t.Errorf("without the indexes: access %q key %q, want ALL and none", access, key)
		}
		indexed, err := openMySQL(context.Background(), url, true, testLog)
		if err != nil {
			t.Fatal(err)
		}
		defer indexed.close()
		if _, key := plan(indexed); key != "items_bucket_created_at_idx" {
			t.Errorf("with the indexes: key %q, want items_bucket_created_at_idx", key)
		}
	})
}
