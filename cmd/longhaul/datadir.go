package main

import (
	"context"
	"errors"
	"net/url"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/store"
)

// DefaultStoreFile is the SQLite file, under the data directory, that
// commands use when --store is not given.
const DefaultStoreFile = "longhaul.db"

// storeFlags are the flags of every command that reads or writes results:
// --data DIR (the data directory) and --store FILE|DSN (the result store).
type storeFlags struct {
	data  string
	store string
}

func (f *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.data, "data", "", "data directory (default $XDG_DATA_HOME/longhaul or ~/.local/share/longhaul)")
	fs.StringVar(&f.store, "store", "", "result store: a SQLite file or a postgres:// URL (default $LONGHAUL_STORE, else DATA/"+DefaultStoreFile+")")
}

// dataDir resolves the data directory: dir when set, else
// $XDG_DATA_HOME/longhaul (when absolute, as the XDG spec requires), else
// $HOME/.local/share/longhaul. The directory is not created here.
func (a *app) dataDir(dir string) (string, error) {
	if dir != "" {
		return filepath.Clean(dir), nil
	}
	if x := a.getenv("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "longhaul"), nil
	}
	if h := a.getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "share", "longhaul"), nil
	}
	return "", errors.New("no data directory: set --data DIR, $XDG_DATA_HOME or $HOME")
}

// storeDSN resolves the store: --store when set, else $LONGHAUL_STORE, else
// DATA/longhaul.db.
func (a *app) storeDSN(f storeFlags) (string, error) {
	if f.store != "" {
		return f.store, nil
	}
	if env := a.getenv("LONGHAUL_STORE"); env != "" {
		return env, nil
	}
	dir, err := a.dataDir(f.data)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, DefaultStoreFile), nil
}

// openStore opens the store that f names (creating a SQLite file and its
// directory if needed). A store that cannot be opened is the user's to fix
// (a bad path or URL): bad input.
func (a *app) openStore(ctx context.Context, f storeFlags) (store.Store, string, error) {
	dsn, err := a.storeDSN(f)
	if err != nil {
		return nil, "", badInput{err}
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, "", badInput{err}
	}
	return st, displayDSN(dsn), nil
}

// displayDSN is dsn without a password, for messages.
func displayDSN(dsn string) string {
	if !store.IsPostgres(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
