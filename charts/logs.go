package charts

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/longhaul-dev/longhaul/report"
	"github.com/longhaul-dev/longhaul/store"
)

// logTailLines is how many of the target's last lines a run page shows.
const logTailLines = 20

// logView is one kept output of a run's process on its page: a link to the
// whole text and, for the target's latest incarnation, its last lines.
type logView struct {
	Source      string
	Incarnation int
	Size        string
	Truncated   bool
	URL         string
	Tail        []string
}

// runLogs lists what st kept of run id's processes' output (store.Logs:
// at each environment's teardown), the target's last lines shown. A store
// without logs, or one that fails to read them, gives none: the page does
// not depend on them.
func runLogs(ctx context.Context, st Reader, id, base string) []logView {
	lr, ok := st.(store.Logs)
	if !ok {
		return nil
	}
	ls, err := lr.Logs(ctx, id, true)
	if err != nil {
		return nil
	}
	out := make([]logView, len(ls))
	tail := -1 // the target's latest incarnation
	for i, l := range ls {
		out[i] = logView{Source: l.Source, Incarnation: l.Incarnation, Size: fmtBytes(float64(l.Bytes)), Truncated: l.Truncated,
			URL: base + "/logs/" + url.PathEscape(l.Source) + "?incarnation=" + strconv.Itoa(l.Incarnation)}
		if l.Source == "target" && (tail < 0 || l.Incarnation > ls[tail].Incarnation) {
			tail = i
		}
	}
	if tail >= 0 {
		out[tail].Tail = lastLines(ls[tail].Data, logTailLines)
	}
	return out
}

// lastLines returns the last n lines of gzipped text (nil when it cannot
// be read).
func lastLines(gz []byte, n int) []string {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil
	}
	var ring []string
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if len(ring) == n {
			ring = ring[1:]
		}
		ring = append(ring, sc.Text())
	}
	return ring
}

// runLog serves the whole kept output of one of a run's processes as text
// (?incarnation=N: of that incarnation only), as `longhaul logs` prints it.
func (s *Server) runLog(w http.ResponseWriter, r *http.Request) error {
	lr, ok := s.opts.Store.(store.Logs)
	if !ok {
		return store.ErrNotFound
	}
	inc, err := intParam(r, "incarnation")
	if err != nil {
		return err
	}
	source := r.PathValue("source")
	if source != "target" && source != "database" {
		return fmt.Errorf("%w: %q: a run keeps the output of its target and its database", errBadRequest, source)
	}
	var buf bytes.Buffer
	err = report.WriteLogs(r.Context(), lr, r.PathValue("id"), report.LogQuery{Source: source, Incarnation: inc}, &buf)
	if errors.Is(err, report.ErrNoLogs) {
		return fmt.Errorf("%w: %v", store.ErrNotFound, err)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, err = io.Copy(w, &buf)
	return err
}
