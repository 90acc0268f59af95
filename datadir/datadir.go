// Package datadir is where a longhaul command keeps its files on this host:
// the data directory, the default result store in it, the embedded Temporal
// server's state and the log files.
//
//	dir, err := datadir.Resolve(flagValue, os.Getenv) // --data, else XDG, else HOME
//	dsn, err := datadir.StoreDSN(storeFlag, flagValue, os.Getenv)
//	lg, err := datadir.OpenLogs(dir, os.Stderr, datadir.LogOptions{})
//	defer lg.Close()
package datadir

import (
	"errors"
	"net/url"
	"path/filepath"

	"github.com/longhaul-dev/longhaul/store"
)

// StoreFile is the SQLite file, under the data directory, that commands use
// when --store is not given.
const StoreFile = "longhaul.db"

// TemporalDir is the embedded Temporal server's directory under the data
// directory.
const TemporalDir = "temporal"

// Resolve is the data directory: dir when set, else $XDG_DATA_HOME/longhaul
// (when absolute, as the XDG spec requires), else $HOME/.local/share/longhaul.
// The directory is not created here.
func Resolve(dir string, getenv func(string) string) (string, error) {
	if dir != "" {
		return filepath.Clean(dir), nil
	}
	if x := getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "longhaul"), nil
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "longhaul"), nil
	}
	return "", errors.New("no data directory: set --data DIR, $XDG_DATA_HOME or $HOME")
}

// StoreDSN is the result store: storeFlag when set, else $LONGHAUL_STORE,
// else StoreFile in the data directory that dir resolves to.
func StoreDSN(storeFlag, dir string, getenv func(string) string) (string, error) {
	if storeFlag != "" {
		return storeFlag, nil
	}
	if env := getenv("LONGHAUL_STORE"); env != "" {
		return env, nil
	}
	d, err := Resolve(dir, getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, StoreFile), nil
}

// DisplayDSN is dsn without a password, for messages.
func DisplayDSN(dsn string) string {
	if !store.IsPostgres(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
