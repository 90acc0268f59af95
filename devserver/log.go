package devserver

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger forwards the server's warnings and errors to slog and drops
// the rest: the server logs several hundred info lines on start-up alone.
type serverLogger struct {
	l *slog.Logger
	// stopping is set when Stop begins: the services then log dozens of
	// warnings about each other going away, which say nothing to a user.
	stopping *atomic.Bool
}

// benign are messages the server logs on every start of a dev server.
var benign = []string{
	"HTTP API port has not been set",
}

// benignErrors are errors the services report about each other while they
// start up (they connect before the frontend is serving, then retry).
var benignErrors = []string{
	"Frontend is not healthy yet",
	// Membership of a one-process cluster settles within the first second;
	// until then the services' first calls to each other find no host.
	"Not enough hosts to serve the request",
}

var _ log.Logger = serverLogger{}
var _ log.WithLogger = serverLogger{}

func newServerLogger(l *slog.Logger, stopping *atomic.Bool) serverLogger {
	return serverLogger{l: l.With("component", "temporal-server"), stopping: stopping}
}

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if s.stopping.Load() || !s.l.Enabled(ctx, level) {
		return
	}
	for _, b := range benign {
		if strings.HasPrefix(msg, b) {
			return
		}
	}
	attrs := make([]slog.Attr, 0, len(tags))
	for _, t := range tags {
		v := tagValue(t)
		if str, ok := v.(string); ok {
			for _, b := range benignErrors {
				if strings.Contains(str, b) {
					return
				}
			}
		}
		attrs = append(attrs, slog.Any(t.Key(), v))
	}
	s.l.LogAttrs(ctx, level, msg, attrs...)
}

// tagValue renders errors as their message (slog would otherwise print {}).
func tagValue(t tag.Tag) any {
	v := t.Value()
	if err, ok := v.(error); ok {
		return err.Error()
	}
	return v
}

func (s serverLogger) Debug(string, ...tag.Tag)           {}
func (s serverLogger) Info(string, ...tag.Tag)            {}
func (s serverLogger) Warn(msg string, tags ...tag.Tag)   { s.log(slog.LevelWarn, msg, tags) }
func (s serverLogger) Error(msg string, tags ...tag.Tag)  { s.log(slog.LevelError, msg, tags) }
func (s serverLogger) DPanic(msg string, tags ...tag.Tag) { s.log(slog.LevelError, msg, tags) }
func (s serverLogger) Panic(msg string, tags ...tag.Tag) {
	s.log(slog.LevelError, msg, tags)
	panic(msg)
}
func (s serverLogger) Fatal(msg string, tags ...tag.Tag) {
	// The server treats Fatal as "does not return".
	s.log(slog.LevelError, msg, tags)
	for _, t := range tags {
		if t.Key() == "error" {
			msg = fmt.Sprintf("%s: %v", msg, tagValue(t))
			break
		}
	}
	panic(serverFatal(msg))
}

// serverFatal is what Fatal panics with: the message and the "error" tag's
// text. Start returns it as its error.
type serverFatal string

func (f serverFatal) Error() string { return "temporal server: " + string(f) }

// With returns a logger that adds tags to every line.
func (s serverLogger) With(tags ...tag.Tag) log.Logger {
	args := make([]any, 0, 2*len(tags))
	for _, t := range tags {
		args = append(args, t.Key(), tagValue(t))
	}
	return serverLogger{l: s.l.With(args...), stopping: s.stopping}
}
