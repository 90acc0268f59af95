package devserver

import (
	"errors"
	"testing"
)

func TestSetPersistence(t *testing.T) {
	dataDir := func() (string, error) { return "/data/temporal", nil }
	tests := []struct {
		persistence string
		want        Options
	}{
		{"postgres://t:s@db/temporal", Options{Postgres: "postgres://t:s@db/temporal"}},
		{"postgresql://db/temporal", Options{Postgres: "postgresql://db/temporal"}},
		{"/var/lib/temporal.db", Options{DBFile: "/var/lib/temporal.db"}},
		{"", Options{DataDir: "/data/temporal"}},
	}
	for _, tt := range tests {
		var got Options
		if err := got.SetPersistence(tt.persistence, dataDir); err != nil {
			t.Fatalf("%q: %v", tt.persistence, err)
		}
		if got.Postgres != tt.want.Postgres || got.DBFile != tt.want.DBFile || got.DataDir != tt.want.DataDir {
			t.Errorf("%q: got %+v, want %+v", tt.persistence, got, tt.want)
		}
	}
	// The data directory is asked for only when it is used.
	bad := func() (string, error) { return "", errors.New("--data: not a directory") }
	var o Options
	if err := o.SetPersistence("/var/lib/temporal.db", bad); err != nil {
		t.Errorf("with a file: %v, want the data directory left alone", err)
	}
	if err := o.SetPersistence("", bad); err == nil || err.Error() != "--data: not a directory" {
		t.Errorf("without persistence: err %v, want the data directory's", err)
	}
}
