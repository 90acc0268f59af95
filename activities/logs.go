package activities

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"

	"github.com/longhaul-dev/longhaul/store"
	"github.com/longhaul-dev/longhaul/targetlog"
)

// MaxLogBytes is how much of each process's output (the target's, the
// database's) a run keeps per incarnation: the end of it. 4 MiB of text is
// hours of a quiet server's log and a few minutes of a chatty one; gzipped
// it is typically a tenth of that in the store.
const MaxLogBytes = 4 << 20

// Output is the end of what one process of an environment printed.
type Output struct {
	Source    string // "target" or "database"
	Text      []byte
	Truncated bool
}

// LogReader is a Provisioner that can read what its environments'
// processes printed (package provision's local and docker providers,
// through the worker's adapter). Teardown keeps it with the run first.
type LogReader interface {
	Logs(ctx context.Context, env Environment, maxBytes int) ([]Output, error)
}

// keepLogs stores the output of env's processes with the run, masked and
// gzipped, before teardown removes them (only: the one source to keep, ""
// for all; a restart keeps the crashed target's). It never fails the
// teardown: a log that cannot be read or stored is a warning. A retried
// teardown writes the same logs again (the store replaces them), unless
// they are already gone — then what the first attempt stored stays.
func (a *Activities) keepLogs(ctx context.Context, env Environment, only string) {
	lr, ok := a.Provisioner.(LogReader)
	if !ok || env.RunID == "" {
		return
	}
	log := a.logger().With("run", env.RunID, "incarnation", env.Incarnation)
	outs, err := lr.Logs(ctx, env, MaxLogBytes)
	if err != nil {
		log.Warn("reading the target's output for the run failed; it is not kept", "err", err)
	}
	if len(outs) == 0 {
		return
	}
	var mask targetlog.Masker
	if run, err := a.Store.GetRun(ctx, env.RunID); err == nil {
		mask = targetlog.NewMasker(targetlog.Secrets(run.Scenario, os.LookupEnv))
	}
	for _, o := range outs {
		if len(o.Text) == 0 || (only != "" && o.Source != only) {
			continue
		}
		text := []byte(mask.String(string(o.Text)))
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		_, _ = w.Write(text)
		_ = w.Close()
		l := store.TargetLog{RunID: env.RunID, Incarnation: env.Incarnation, Source: o.Source, Bytes: int64(len(text)), Truncated: o.Truncated, Data: gz.Bytes()}
		if err := a.Store.PutLog(ctx, l); err != nil {
			log.Warn("keeping the target's output failed", "source", o.Source, "err", err)
		}
	}
}
