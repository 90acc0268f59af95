package devserver

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCheckHealthNothingListening: no frontend at the address is an error
// that names it, within the context's time. (TestRunStopRestart checks a
// running server passes.)
func TestCheckHealthNothingListening(t *testing.T) {
	addr := "127.0.0.1:" + strconv.Itoa(testPort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	t0 := time.Now()
	err := CheckHealth(ctx, addr)
	if err == nil || !strings.HasPrefix(err.Error(), "temporal at "+addr+": ") {
		t.Errorf("CheckHealth(%s) = %v, want an error naming the address", addr, err)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("took %s, want it bounded by the context", d)
	}
}
