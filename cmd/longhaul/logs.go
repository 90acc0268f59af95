package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/report"
)

// temporalLogFile is where, under the data directory, the Temporal SDK's and
// the embedded server's own log lines go.
const temporalLogFile = "temporal.log"

// maxTemporalLog is the size past which an existing log is moved aside (to
// temporal.log.1) when a command opens it, so a long-lived data directory
// does not grow without bound.
const maxTemporalLog = 64 << 20

// logs are the loggers of a command that talks to Temporal (run, dev,
// worker). The terminal is for people: longhaul's own lines (warnings and
// errors) go to stderr, Temporal's — the SDK's "Activity error." lines, the
// server's — to DATA/temporal.log, and to stderr as well with --verbose.
type logs struct {
	own      *slog.Logger
	temporal *slog.Logger
	path     string // the Temporal log file
	file     *os.File
	ownFile  *os.File
	// lines renders own's warnings on the terminal; SetProgress keeps a
	// progress bar intact around them.
	lines *report.WarningLines
}

// verboseFlag registers --verbose.
func verboseFlag(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "verbose", false, "also show Temporal's own log lines (SDK and server) on stderr; they are always in DATA/"+temporalLogFile)
}

// openLogs opens DATA/temporal.log for appending. LONGHAUL_DEBUG=1 logs at
// debug level on both.
func (a *app) openLogs(dataDir string, verbose bool) (*logs, error) {
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, badInputf("data directory: %v", err)
	}
	path := filepath.Join(dataDir, temporalLogFile)
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxTemporalLog {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the Temporal log: %w", err)
	}
	debug := a.getenv("LONGHAUL_DEBUG") != ""
	fileLevel := slog.LevelInfo
	if debug {
		fileLevel = slog.LevelDebug
	}
	var temporal slog.Handler = slog.NewTextHandler(f, &slog.HandlerOptions{Level: fileLevel})
	if verbose {
		temporal = slog.NewMultiHandler(temporal, slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: fileLevel}))
	}
	// longhaul's own records: readable lines on the terminal (warnings
	// and errors), every record structured in DATA/longhaul.log.
	ownPath := filepath.Join(dataDir, ownLogFile)
	if fi, err := os.Stat(ownPath); err == nil && fi.Size() > maxTemporalLog {
		_ = os.Rename(ownPath, ownPath+".1")
	}
	of, err := os.OpenFile(ownPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open the log: %w", err)
	}
	termLevel := slog.LevelWarn
	if debug {
		termLevel = slog.LevelDebug
	}
	lines := report.NewWarningLines(a.stderr, termLevel, slog.NewTextHandler(of, &slog.HandlerOptions{Level: fileLevel}))
	return &logs{own: slog.New(lines), lines: lines, temporal: slog.New(temporal), path: path, file: f, ownFile: of}, nil
}

// ownLogFile is where, under the data directory, longhaul's own structured
// log records go (the terminal shows warnings as readable lines).
const ownLogFile = "longhaul.log"

// Close closes the log files.
func (l *logs) Close() {
	l.file.Close()
	l.ownFile.Close()
}
