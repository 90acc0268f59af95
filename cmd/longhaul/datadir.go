package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/store"
)

// storeFlags are the flags of every command that reads or writes results:
// --data DIR (the data directory) and --store FILE|DSN (the result store).
type storeFlags struct {
	data  string
	store string
}

func (f *storeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.data, "data", "", "data directory (default $XDG_DATA_HOME/longhaul or ~/.local/share/longhaul)")
	fs.StringVar(&f.store, "store", "", "result store: a SQLite file or a postgres:// URL (default $LONGHAUL_STORE, else DATA/"+datadir.StoreFile+")")
}

// dataDir resolves the data directory (package datadir).
func (a *app) dataDir(dir string) (string, error) { return datadir.Resolve(dir, a.getenv) }

// storeDSN resolves the store: --store, $LONGHAUL_STORE or DATA/longhaul.db.
func (a *app) storeDSN(f storeFlags) (string, error) {
	return datadir.StoreDSN(f.store, f.data, a.getenv)
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
	return st, datadir.DisplayDSN(dsn), nil
}
