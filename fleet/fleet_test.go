package fleet_test

import (
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/activities/activitiestest"
	"github.com/longhaul-dev/longhaul/fleet"
	"github.com/longhaul-dev/longhaul/store"
)

func seeded(t *testing.T) *activitiestest.Store {
	t.Helper()
	ctx := context.Background()
	st := &activitiestest.Store{}
	for i, s := range []store.Status{store.Queued, store.Queued, store.Running, store.Completed} {
		if err := st.PutRun(ctx, store.Run{ID: string(rune('a' + i)), Name: "demo", Kind: "soak", Status: s}); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []string{"h1", "h2", "h2"} {
		if ok, _, _ := st.ClaimSlot(ctx, store.Slot{Holder: h + time.Now().String(), Host: h}, 2); !ok {
			t.Fatal("seeding a slot failed")
		}
	}
	return st
}

func TestPusher(t *testing.T) {
	var (
		mu     sync.Mutex
		bodies []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
	}))
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fleet.Pusher{Store: seeded(t), URL: srv.URL + "/api/v1/import/prometheus", Host: "server-1", Interval: 20 * time.Millisecond}.Run(ctx)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(bodies)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) < 2 {
		t.Fatalf("%d pushes in 5 s at a 20 ms interval", len(bodies))
	}
	body := bodies[len(bodies)-1]
	for _, want := range []string{
		`longhaul_fleet_runs{host="server-1",status="queued"} 2`,
		`longhaul_fleet_runs{host="server-1",status="pending"} 0`,
		`longhaul_fleet_runs{host="server-1",status="running"} 1`,
		`longhaul_fleet_comparisons{host="server-1",status="queued"} 0`,
		`longhaul_fleet_slots_held{host="server-1",worker_host="h1"} 1`,
		`longhaul_fleet_slots_held{host="server-1",worker_host="h2"} 2`,
		`process_resident_memory_bytes{host="server-1"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("push lacks %q:\n%s", want, body)
		}
	}
}

// A host whose slots were all released disappears from the next snapshot.
func TestStateSetDropsIdleHosts(t *testing.T) {
	ctx := context.Background()
	st := seeded(t)
	s, err := fleet.Read(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	if s.SlotsHeld["h2"] != 2 || s.Runs[store.Queued] != 2 {
		t.Fatalf("state %+v", s)
	}
	set := metricsSet(s)
	delete(s.SlotsHeld, "h1")
	s.Set(set)
	var b strings.Builder
	set.WritePrometheus(&b)
	if strings.Contains(b.String(), `worker_host="h1"`) {
		t.Errorf("h1 still reported after it held no slot:\n%s", b.String())
	}
}
