package probes

import (
	"context"
	"os"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/longhaul-dev/longhaul/internal/pgtest"
)

// TestPGStatFlushLag measures how late pg_stat_user_tables is: one backend
// runs sequential scans back to back and records when each one finished;
// another reads seq_scan every 250 ms. A reading of N scans taken at time t
// missed scan N+1, so it is at least t minus that scan's finish time late:
// the lag reported (a lower bound, as fine as the scans are frequent). It
// justifies Config.DatabaseDelay. Run it with bench/probes-pgstat-lag.sh
// (LONGHAUL_MEASURE=1); it takes about 20 s.
func TestPGStatFlushLag(t *testing.T) {
	if os.Getenv("LONGHAUL_MEASURE") == "" {
		t.Skip("a measurement, not a test: set LONGHAUL_MEASURE=1 (bench/probes-pgstat-lag.sh)")
	}
	dsn := pgtest.Start(t)
	ctx := context.Background()
	load := newPGLoad(t, dsn, 2000, 1)
	reader, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close(ctx)
	var relid uint32
	if err := reader.QueryRow(ctx, `SELECT 'items'::regclass::oid`).Scan(&relid); err != nil {
		t.Fatal(err)
	}
	var base int64
	if err := reader.QueryRow(ctx, `SELECT seq_scan FROM pg_stat_user_tables WHERE relid = $1`, relid).Scan(&base); err != nil {
		t.Fatal(err)
	}

	const run = 15 * time.Second
	finished := make(chan []time.Time)
	go func() {
		var ends []time.Time
		for deadline := time.Now().Add(run + time.Second); time.Now().Before(deadline); {
			if _, err := load.conn.Exec(ctx, `SELECT count(*) FROM items WHERE bucket = 1`); err != nil {
				break
			}
			ends = append(ends, time.Now())
		}
		finished <- ends
	}()
	type reading struct {
		at    time.Time
		scans int64
	}
	var readings []reading
	for deadline := time.Now().Add(run); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		var n int64
		if _, err := reader.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
			t.Fatal(err)
		}
		if err := reader.QueryRow(ctx, `SELECT seq_scan FROM pg_stat_user_tables WHERE relid = $1`, relid).Scan(&n); err != nil {
			t.Fatal(err)
		}
		readings = append(readings, reading{time.Now(), n - base})
	}
	ends := <-finished
	var lags []time.Duration
	for _, r := range readings[4:] { // skip the first second
		if r.scans <= 0 || int(r.scans) >= len(ends) {
			continue
		}
		// Scan r.scans+1 had finished by ends[r.scans] but was not visible:
		// the reading covers activity up to somewhere before that.
		if next := ends[r.scans]; next.Before(r.at) {
			lags = append(lags, r.at.Sub(next))
		} else {
			lags = append(lags, 0)
		}
	}
	if len(lags) == 0 {
		t.Fatal("no readings")
	}
	slices.Sort(lags)
	var sum time.Duration
	for _, l := range lags {
		sum += l
	}
	q := func(p float64) time.Duration {
		return lags[sort.Search(len(lags), func(i int) bool { return float64(i) >= p*float64(len(lags)-1) })]
	}
	t.Logf("%d scans in %v (%.0f/s); %d readings: statistics lag mean %v, p50 %v, p90 %v, max %v",
		len(ends), run, float64(len(ends))/run.Seconds(), len(lags), (sum / time.Duration(len(lags))).Round(time.Millisecond),
		q(0.5).Round(time.Millisecond), q(0.9).Round(time.Millisecond), lags[len(lags)-1].Round(time.Millisecond))
}
