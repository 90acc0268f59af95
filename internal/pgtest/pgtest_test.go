package pgtest_test

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/longhaul-dev/longhaul/internal/pgtest"
)

func TestStart(t *testing.T) {
	dsn := pgtest.Start(t)
	other := pgtest.NewDatabase(t, dsn)
	for _, d := range []string{dsn, other} {
		db, err := sql.Open("pgx", d)
		if err != nil {
			t.Fatal(err)
		}
		var got int
		if err := db.QueryRowContext(context.Background(), "SELECT 40 + 2").Scan(&got); err != nil {
			t.Fatalf("query %s: %v", d, err)
		}
		if got != 42 {
			t.Errorf("SELECT 40 + 2 = %d, want 42", got)
		}
		var name string
		if err := db.QueryRow("SELECT current_database()").Scan(&name); err != nil {
			t.Fatal(err)
		}
		if name == "postgres" {
			t.Errorf("database %q: want a fresh database, not the maintenance one", name)
		}
		db.Close()
	}
}
