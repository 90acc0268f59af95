package activitiestest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/longhaul-dev/longhaul/notify"
)

// Receiver is an httptest receiver of notifications (a schedule's
// --notify URL) on 127.0.0.1. It answers the statuses given to
// NewReceiver in turn, the last one from then on; its methods are safe
// for concurrent use.
type Receiver struct {
	*httptest.Server
	mu        sync.Mutex
	statuses  []int
	posts     int
	delivered []notify.Payload
}

// NewReceiver starts a Receiver that answers statuses in turn (204 when
// none are given) and stops with the test.
func NewReceiver(t testing.TB, statuses ...int) *Receiver {
	t.Helper()
	if len(statuses) == 0 {
		statuses = []int{http.StatusNoContent}
	}
	r := &Receiver{statuses: statuses}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var p notify.Payload
		if err := json.NewDecoder(req.Body).Decode(&p); err != nil {
			t.Errorf("notification body: %v", err)
		}
		r.mu.Lock()
		status := r.statuses[min(r.posts, len(r.statuses)-1)]
		r.posts++
		if status >= 200 && status < 300 {
			r.delivered = append(r.delivered, p)
		}
		r.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(r.Close)
	return r
}

// Posts is how many POSTs arrived, answered 2xx or not.
func (r *Receiver) Posts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.posts
}

// Delivered are the payloads of the POSTs answered 2xx, in arrival order.
func (r *Receiver) Delivered() []notify.Payload {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Payload(nil), r.delivered...)
}
