package soakworker

import (
	"context"
	"errors"
	"io"

	"github.com/VictoriaMetrics/metrics"
	"go.temporal.io/sdk/client"

	"github.com/longhaul-dev/longhaul/datadir"
	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/workflows"
)

// Host is what a process that runs soaks (longhaul run, dev, worker) holds
// beside its Temporal client: the data directory, the result store, the
// log files and, when asked for, the metrics endpoint. Close releases them.
type Host struct {
	DataDir string
	Store   store.Store
	Where   string        // the store, for messages (no password)
	Metrics *metrics.Set  // nil without HostOptions.MetricsAddr
	Logs    *datadir.Logs // DATA/temporal.log and longhaul's own records
	stop    func()        // stops the metrics endpoint; nil when none
}

// HostOptions are where a Host's parts are, as the command line and the
// environment give them.
type HostOptions struct {
	Data, Store string              // --data and --store ("": the defaults, package datadir)
	Getenv      func(string) string // $XDG_DATA_HOME, $LONGHAUL_STORE, $LONGHAUL_DEBUG (debug logs)
	MetricsAddr string              // "": no metrics endpoint
	Terminal    io.Writer           // where people read longhaul's warnings
	Verbose     bool                // Temporal's log lines on the terminal too
}

// ErrUnusable marks OpenHost's errors that are the user's to fix: a data
// directory, store or metrics address that cannot be used. The message is
// the cause's alone.
var ErrUnusable = errors.New("unusable")

type unusableError struct{ err error }

func (e unusableError) Error() string        { return e.err.Error() }
func (e unusableError) Unwrap() error        { return e.err }
func (e unusableError) Is(target error) bool { return target == ErrUnusable }

// OpenHost opens the data directory (creating it), the store, the log files
// and the metrics endpoint.
func OpenHost(ctx context.Context, o HostOptions) (*Host, error) {
	dir, err := datadir.Resolve(o.Data, o.Getenv)
	if err != nil {
		return nil, unusableError{err}
	}
	dsn, err := datadir.StoreDSN(o.Store, o.Data, o.Getenv)
	if err != nil {
		return nil, unusableError{err}
	}
	st, err := store.Open(ctx, dsn)
	if err != nil {
		return nil, unusableError{err}
	}
	h := &Host{DataDir: dir, Store: st, Where: datadir.DisplayDSN(dsn)}
	if h.Logs, err = datadir.OpenLogs(dir, o.Terminal, datadir.LogOptions{Verbose: o.Verbose, Debug: o.Getenv("LONGHAUL_DEBUG") != ""}); err != nil {
		st.Close()
		if errors.Is(err, datadir.ErrDir) {
			err = unusableError{err}
		}
		return nil, err
	}
	if o.MetricsAddr != "" {
		h.Metrics = metrics.NewSet()
		if h.stop, err = ServeMetrics(o.MetricsAddr, h.Metrics); err != nil {
			h.Close()
			return nil, unusableError{err}
		}
	}
	return h, nil
}

// StartWorker starts a worker (New) on h's store, data directory, metrics
// and logs, with the rest of cfg; the caller stops it.
func (h *Host) StartWorker(ctx context.Context, c client.Client, cfg Config) (*workflows.Worker, error) {
	cfg.Metrics, cfg.Logger = h.Metrics, h.Logs.Own
	w, err := New(ctx, c, h.Store, h.DataDir, cfg)
	if err != nil {
		return nil, err
	}
	return w, w.Start()
}

// Close stops the metrics endpoint, closes the logs and the store.
func (h *Host) Close() {
	if h.stop != nil {
		h.stop()
	}
	if h.Logs != nil {
		h.Logs.Close()
	}
	h.Store.Close()
}
