package main

import (
	"errors"

	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/datadir"
)

// verboseFlag registers --verbose.
func verboseFlag(fs *pflag.FlagSet, v *bool) {
	fs.BoolVar(v, "verbose", false, "also show Temporal's own log lines (SDK and server) on stderr; they are always in DATA/"+datadir.TemporalLogFile)
}

// openLogs opens the log files in the data directory (package datadir);
// LONGHAUL_DEBUG=1 logs at debug level. A data directory that cannot be
// created is bad input.
func (a *app) openLogs(dataDir string, verbose bool) (*datadir.Logs, error) {
	lg, err := datadir.OpenLogs(dataDir, a.stderr, datadir.LogOptions{Verbose: verbose, Debug: a.getenv("LONGHAUL_DEBUG") != ""})
	if errors.Is(err, datadir.ErrDir) {
		return nil, badInput{err}
	}
	return lg, err
}
