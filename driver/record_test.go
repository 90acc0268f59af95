package driver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/scenarios"
)

const recordScenario = `
name: rec
setup:
  - name: login
    request: {method: POST, path: /login, json: {user: "u-{{ uuid }}"}}
    capture: [{json: token, var: token}]
ops:
  - name: create
    weight: 2
    request: {method: POST, path: /items, json: {n: "{{ randInt 1 1000 }}"}, headers: {Authorization: "{{ .token }}"}}
    expect: {status: [201]}
    capture: [{json: id, pool: items}]
  - name: get
    weight: 1
    request: {method: GET, path: "/items/{{ pick \"items\" }}"}
`

// itemServer is a tiny stateful API: ids count up per server.
func itemServer(t *testing.T) *url.URL {
	var mu sync.Mutex
	next := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/login":
			fmt.Fprint(w, `{"token":"t1"}`)
		case r.Method == "POST":
			next++
			w.WriteHeader(201)
			fmt.Fprintf(w, `{"id":%d}`, next)
		default:
			fmt.Fprintf(w, `{"id":%s}`, strings.TrimPrefix(r.URL.Path, "/items/"))
		}
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	return u
}

func record(t *testing.T, seed uint64) []equivalence.Exchange {
	t.Helper()
	s, err := scenarios.Parse([]byte(recordScenario), "rec.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scenarios.Compile(s, scenarios.CompileOptions{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	xs, err := driver.Record(context.Background(), driver.RecordOptions{Target: itemServer(t), Plan: plan, Seed: seed, Requests: 30})
	if err != nil {
		t.Fatal(err)
	}
	return xs
}

func TestRecordSameSeedSameSequence(t *testing.T) {
	a, b := record(t, 7), record(t, 7)
	if len(a) != 30 {
		t.Fatalf("%d exchanges, want 30", len(a))
	}
	if a[0].Op != "login" || a[0].Status != 200 || string(a[0].Body) != `{"token":"t1"}` {
		t.Errorf("first exchange %+v, want the login setup step", a[0])
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("same seed, different sequences:\n%v\n%v", a, b)
	}
	if res, _ := equivalence.Compare(a, b, equivalence.Options{}); res.Status != equivalence.Identical {
		t.Errorf("equivalence of two identical servers: %+v", res.FirstDifference)
	}
	c := record(t, 8)
	if reflect.DeepEqual(a, c) {
		t.Error("seeds 7 and 8 sent the same sequence")
	}
}

func TestRecordBadOptions(t *testing.T) {
	if _, err := driver.Record(context.Background(), driver.RecordOptions{}); err == nil {
		t.Error("Record without a plan: no error")
	}
}
