package datadir

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/longhaul-dev/longhaul/report"
)

// TemporalLogFile is where, under the data directory, the Temporal SDK's
// and the embedded server's own log lines go.
const TemporalLogFile = "temporal.log"

// OwnLogFile is where, under the data directory, longhaul's own structured
// log records go (the terminal shows warnings as readable lines).
const OwnLogFile = "longhaul.log"

// maxLogBytes is the size past which an existing log is moved aside (to
// NAME.1) when a command opens it, so a long-lived data directory does not
// grow without bound.
const maxLogBytes = 64 << 20

// Logs are the loggers of a command that talks to Temporal (run, dev,
// worker). The terminal is for people: longhaul's own lines (warnings and
// errors) go to the terminal, Temporal's — the SDK's "Activity error."
// lines, the server's — to DATA/temporal.log, and to the terminal as well
// when Verbose.
type Logs struct {
	Own      *slog.Logger
	Temporal *slog.Logger
	Path     string // the Temporal log file
	// Lines renders Own's warnings on the terminal; SetProgress keeps a
	// progress bar intact around them.
	Lines *report.WarningLines

	file, ownFile *os.File
}

// ErrDir is OpenLogs' error when the data directory cannot be created: the
// user's to fix (another --data).
var ErrDir = errors.New("data directory")

// LogOptions are how OpenLogs logs.
type LogOptions struct {
	Verbose bool // Temporal's lines on the terminal too
	Debug   bool // debug level on the terminal and in the files
}

// OpenLogs opens DATA/temporal.log and DATA/longhaul.log for appending,
// creating the data directory dir if needed; terminal is where people read
// longhaul's warnings. The caller must Close the logs.
func OpenLogs(dir string, terminal io.Writer, o LogOptions) (*Logs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrDir, err)
	}
	path := filepath.Join(dir, TemporalLogFile)
	f, err := openAppend(path)
	if err != nil {
		return nil, fmt.Errorf("open the Temporal log: %w", err)
	}
	fileLevel, termLevel := slog.LevelInfo, slog.LevelWarn
	if o.Debug {
		fileLevel, termLevel = slog.LevelDebug, slog.LevelDebug
	}
	var temporal slog.Handler = slog.NewTextHandler(f, &slog.HandlerOptions{Level: fileLevel})
	if o.Verbose {
		temporal = slog.NewMultiHandler(temporal, slog.NewTextHandler(terminal, &slog.HandlerOptions{Level: fileLevel}))
	}
	// longhaul's own records: readable lines on the terminal (warnings
	// and errors), every record structured in DATA/longhaul.log.
	of, err := openAppend(filepath.Join(dir, OwnLogFile))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open the log: %w", err)
	}
	lines := report.NewWarningLines(terminal, termLevel, slog.NewTextHandler(of, &slog.HandlerOptions{Level: fileLevel}))
	return &Logs{Own: slog.New(lines), Lines: lines, Temporal: slog.New(temporal), Path: path, file: f, ownFile: of}, nil
}

// openAppend opens path for appending, first moving it aside when it is
// larger than maxLogBytes.
func openAppend(path string) (*os.File, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > maxLogBytes {
		_ = os.Rename(path, path+".1")
	}
	return os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// Close closes the log files.
func (l *Logs) Close() {
	l.file.Close()
	l.ownFile.Close()
}
