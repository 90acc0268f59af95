package activities

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"slices"
	"time"

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
	// Windows are the parts of Text printed during each window (byte
	// ranges of whole lines), for the windows whose output is known.
	Windows []store.LogWindow
	// Cursor is where the read ended, for the database's next
	// incarnation (OutputRequest.DatabaseFrom).
	Cursor string
}

// WindowTime is one window of an incarnation: its slot and its time.
type WindowTime struct {
	Index      int
	Start, End time.Time
}

// OutputRequest says what LogReader.ReadOutput reads: the end (MaxBytes)
// of each process's output, cut by Windows, the database's from where the
// incarnation before left it (DatabaseFrom: its kept log's Cursor).
type OutputRequest struct {
	MaxBytes     int
	Windows      []WindowTime
	DatabaseFrom string
}

// LogReader is a Provisioner that can read what its environments'
// processes printed (package provision's local and docker providers,
// through the worker's adapter). Teardown keeps it with the run first.
type LogReader interface {
	ReadOutput(ctx context.Context, env Environment, req OutputRequest) ([]Output, error)
}

// OutputMarker is a Provisioner whose processes' output has no timestamps
// of its own (a local process writing a file): the drive marks where the
// output stood as each window starts and ends, beside the output, so that
// a worker killed mid-run loses no mark of a committed window.
type OutputMarker interface {
	MarkOutput(ctx context.Context, env Environment, index int, end bool) error
}

// keepLogs stores the output of env's processes printed during its
// incarnation with the run, cut by window, masked and gzipped, before
// teardown (or a restart of the target) moves on: the target's, and the
// database's from where the incarnation before left it (the database
// outlives a restarted target; each incarnation keeps what it printed
// meanwhile). It never fails the teardown: a log that cannot be read or
// stored is a warning. A retried teardown writes the same logs again (the
// store replaces them), unless they are already gone — then what the
// first attempt stored stays.
func (a *Activities) keepLogs(ctx context.Context, env Environment) {
	lr, ok := a.Provisioner.(LogReader)
	if !ok || env.RunID == "" {
		return
	}
	log := a.logger().With("run", env.RunID, "incarnation", env.Incarnation)
	req := OutputRequest{MaxBytes: MaxLogBytes}
	if ws, err := a.Store.Windows(ctx, env.RunID, store.WindowQuery{Incarnation: env.Incarnation}); err == nil {
		for _, w := range ws {
			if !w.Start.IsZero() && !w.End.IsZero() {
				req.Windows = append(req.Windows, WindowTime{Index: w.Index, Start: w.Start, End: w.End})
			}
		}
	}
	if kept, err := a.Store.Logs(ctx, env.RunID, false); err == nil {
		for _, l := range kept { // by incarnation: the latest before this one wins
			if l.Source == "database" && l.Incarnation < env.Incarnation {
				req.DatabaseFrom = l.Cursor
			}
		}
	}
	outs, err := lr.ReadOutput(ctx, env, req)
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
		if len(o.Text) == 0 {
			continue // printed nothing (the database's next incarnation reads from the same place)
		}
		text, windows := maskByWindow(mask, o.Text, o.Windows)
		var gz bytes.Buffer
		w := gzip.NewWriter(&gz)
		_, _ = w.Write(text)
		_ = w.Close()
		l := store.TargetLog{RunID: env.RunID, Incarnation: env.Incarnation, Source: o.Source, Bytes: int64(len(text)),
			Truncated: o.Truncated, Windows: windows, Cursor: o.Cursor, Data: gz.Bytes()}
		if err := a.Store.PutLog(ctx, l); err != nil {
			log.Warn("keeping the target's output failed", "source", o.Source, "err", err)
		}
	}
}

// maskByWindow masks the secrets in text and moves the windows' byte
// ranges with it (a masked secret changes the text's length). The text is
// masked piece by piece between the windows' bounds, which are line
// starts, so no secret is cut in two.
func maskByWindow(m targetlog.Masker, text []byte, ws []store.LogWindow) ([]byte, []store.LogWindow) {
	bounds := []int{0, len(text)}
	ws = slices.DeleteFunc(slices.Clone(ws), func(w store.LogWindow) bool { return w.From < 0 || w.From > w.To || w.To > len(text) })
	for _, w := range ws {
		bounds = append(bounds, w.From, w.To)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	moved := make(map[int]int, len(bounds))
	out := make([]byte, 0, len(text))
	for i, b := range bounds {
		moved[b] = len(out)
		if i+1 < len(bounds) {
			out = append(out, m.String(string(text[b:bounds[i+1]]))...)
		}
	}
	spans := make([]store.LogWindow, len(ws))
	for i, w := range ws {
		spans[i] = store.LogWindow{Index: w.Index, From: moved[w.From], To: moved[w.To]}
	}
	return out, spans
}
