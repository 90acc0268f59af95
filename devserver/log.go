package devserver

import (
	"context"
	"fmt"
	"log/slog"

	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/log/tag"
)

// serverLogger forwards the server's warnings and errors to slog and drops
// the rest: the server logs several hundred info lines on start-up alone.
type serverLogger struct {
	l *slog.Logger
}

var _ log.Logger = serverLogger{}
var _ log.WithLogger = serverLogger{}

func newServerLogger(l *slog.Logger) log.Logger {
	return serverLogger{l: l.With("component", "temporal-server")}
}

func (s serverLogger) log(level slog.Level, msg string, tags []tag.Tag) {
	ctx := context.Background()
	if !s.l.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, len(tags))
	for _, t := range tags {
		attrs = append(attrs, slog.Any(t.Key(), tagValue(t)))
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
	panic(fmt.Sprintf("temporal server: fatal: %s", msg))
}

// With returns a logger that adds tags to every line.
func (s serverLogger) With(tags ...tag.Tag) log.Logger {
	args := make([]any, 0, 2*len(tags))
	for _, t := range tags {
		args = append(args, t.Key(), tagValue(t))
	}
	return serverLogger{l: s.l.With(args...)}
}
