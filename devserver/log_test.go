package devserver

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"go.temporal.io/server/common/log/tag"
)

func TestServerLogger(t *testing.T) {
	var buf bytes.Buffer
	stopping := new(atomic.Bool)
	l := newServerLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), stopping)

	l.Info("chatty start-up line")
	l.Debug("debug line")
	l.Warn("HTTP API port has not been set. Nexus HTTP endpoints will not be available.")
	l.With(tag.NewStringTag("service", "history")).Warn("shard lost", tag.Error(errors.New("boom")))
	l.Warn("error creating sdk client", tag.Error(errors.New("failed reaching server: Frontend is not healthy yet")))
	stopping.Store(true)
	l.Error("Not enough hosts to serve the request")

	got := buf.String()
	for _, want := range []string{"shard lost", "service=history", "error=boom", "component=temporal-server"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q:\n%s", want, got)
		}
	}
	for _, not := range []string{"chatty", "debug line", "HTTP API port", "Not enough hosts", "not healthy yet"} {
		if strings.Contains(got, not) {
			t.Errorf("log has %q, which should be dropped:\n%s", not, got)
		}
	}
}
