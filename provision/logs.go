package provision

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
)

// Log sources: what printed an Output.
const (
	LogTarget   = "target"
	LogDatabase = "database"
)

// Output is the end of what one process of an environment printed: its
// stdout and stderr, as the process wrote them (a container's two streams
// merged in order).
type Output struct {
	Source string // LogTarget or LogDatabase
	Text   []byte
	// Truncated: the process printed more than Text holds (its start is cut).
	Truncated bool
	// Windows says which lines of Text each window's time printed, for
	// the windows of LogRequest whose output is known (see LogRequest).
	Windows []WindowSpan
	// Cursor is where this read of the output ended: a database's next
	// incarnation starts there (LogRequest.DatabaseFrom). Opaque.
	Cursor string
}

// WindowSpan is the part of an Output's Text printed during one window:
// Text[From:To], whole lines. From == To: the window printed nothing.
type WindowSpan struct {
	Index    int
	From, To int
}

// WindowTime is one window of the incarnation whose output is read.
type WindowTime struct {
	Index      int
	Start, End time.Time
}

// LogRequest says what LogReader.ReadOutput reads.
type LogRequest struct {
	// MaxBytes bounds each process's Text: its end is kept.
	MaxBytes int
	// Windows are the incarnation's windows. A container's lines are cut
	// by their timestamps (the engine keeps one per line); a local
	// process's by the marks the drive left at each window (MarkOutput).
	Windows []WindowTime
	// DatabaseFrom is the Cursor of the database's output kept for the
	// incarnation before (empty: from its start). The database outlives
	// the target's restarts; each incarnation keeps what it printed then.
	DatabaseFrom string
}

// LogReader is a provisioner that can read what its environments'
// processes printed. The worker keeps it with the run before teardown
// removes it (a local environment's directory, a container).
type LogReader interface {
	// Logs returns the last maxBytes of each process's output; a process
	// whose output is gone is left out.
	Logs(ctx context.Context, env Environment, maxBytes int) ([]Output, error)
	// ReadOutput is Logs with the output cut by window and the database's
	// limited to this incarnation.
	ReadOutput(ctx context.Context, env Environment, req LogRequest) ([]Output, error)
}

// OutputMarker is a provisioner whose processes' output carries no
// timestamps: the drive marks where it stood as each window starts and
// ends, so that ReadOutput can cut it by window.
type OutputMarker interface {
	// MarkOutput records where the output of env's processes stands at
	// the start (end false) or the end of window index.
	MarkOutput(ctx context.Context, env Environment, index int, end bool) error
}

var (
	_ LogReader    = (*chooser)(nil)
	_ LogReader    = (*Local)(nil)
	_ LogReader    = (*Docker)(nil)
	_ OutputMarker = (*chooser)(nil)
	_ OutputMarker = (*Local)(nil)
)

// Logs reads the target's and the database's output files of a local
// environment (envDir/target.log, envDir/ROLE.log; for an incarnation
// whose target was restarted since, envDir/target.N.log).
func (l *Local) Logs(ctx context.Context, env Environment, maxBytes int) ([]Output, error) {
	return l.ReadOutput(ctx, env, LogRequest{MaxBytes: maxBytes})
}

// marksName is the file in a local environment's directory where the drive
// records, at each window's start and end, how long the output files were.
// It lives with the output (not in the worker), so a worker killed mid-run
// loses no mark but the one it was writing.
const marksName = "output.marks"

// ReadOutput reads a local environment's output files, cut by window with
// the marks the drive left (MarkOutput).
func (l *Local) ReadOutput(_ context.Context, env Environment, req LogRequest) ([]Output, error) {
	if err := l.sameHost(env); err != nil {
		return nil, fmt.Errorf("logs of %s: %w", env.ID, err)
	}
	if env.EnvDir == "" {
		return nil, nil
	}
	marks, err := readMarks(filepath.Join(env.EnvDir, marksName), env.Incarnation)
	if err != nil {
		return nil, fmt.Errorf("logs of %s: %w", env.ID, err)
	}
	// Each file, where this incarnation's part of it starts, and its
	// length in a mark.
	type outputFile struct {
		source, name string
		from         int64
		at           func(outputMark) int64
	}
	files := []outputFile{{LogTarget, filepath.Base(targetLogName(env.EnvDir, env.Incarnation)), 0, func(m outputMark) int64 { return m.target }}}
	if env.Database != nil && env.Database.Process.PID > 0 {
		from, _ := strconv.ParseInt(strings.TrimPrefix(req.DatabaseFrom, "offset:"), 10, 64)
		files = append(files, outputFile{LogDatabase, dbRole(env.Database.Kind) + ".log", from, func(m outputMark) int64 { return m.database }})
	}
	var out []Output
	for _, f := range files {
		text, base, truncated, err := fileTail(filepath.Join(env.EnvDir, f.name), f.from, req.MaxBytes)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return out, fmt.Errorf("logs of %s: %w", env.ID, err)
		}
		o := Output{Source: f.source, Text: text, Truncated: truncated, Cursor: "offset:" + strconv.FormatInt(base+int64(len(text)), 10)}
		o.Windows = marks.spans(f.at, base, text)
		out = append(out, o)
	}
	return out, nil
}

// MarkOutput appends where a local environment's output files stand to its
// marks file: one line "incarnation index start|end target-bytes
// database-bytes".
func (l *Local) MarkOutput(_ context.Context, env Environment, index int, end bool) error {
	if err := l.sameHost(env); err != nil {
		return fmt.Errorf("mark the output of %s: %w", env.ID, err)
	}
	if env.EnvDir == "" {
		return nil
	}
	size := func(name string) int64 {
		fi, err := os.Stat(filepath.Join(env.EnvDir, name))
		if err != nil {
			return 0
		}
		return fi.Size()
	}
	var db int64
	if env.Database != nil && env.Database.Process.PID > 0 {
		db = size(dbRole(env.Database.Kind) + ".log")
	}
	phase := "start"
	if end {
		phase = "end"
	}
	line := fmt.Sprintf("%d %d %s %d %d\n", env.Incarnation, index, phase, size(filepath.Base(targetLogName(env.EnvDir, env.Incarnation))), db)
	f, err := os.OpenFile(filepath.Join(env.EnvDir, marksName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("mark the output of %s: %w", env.ID, err)
	}
	// One write of a whole line: O_APPEND keeps concurrent marks (a drive
	// and its retry on the same host) from interleaving.
	_, werr := f.WriteString(line)
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("mark the output of %s: %w", env.ID, werr)
	}
	return nil
}

// outputMark is one line of the marks file.
type outputMark struct {
	index            int
	end              bool
	target, database int64
}

// incarnationMarks are one incarnation's marks in the order written.
type incarnationMarks []outputMark

// readMarks reads the marks of incarnation inc (none when the file is
// absent). A line cut by a worker killed while writing it is skipped.
func readMarks(path string, inc int) (incarnationMarks, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out incarnationMarks
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var (
			n, idx int
			phase  string
			m      outputMark
		)
		if c, err := fmt.Sscanf(sc.Text(), "%d %d %s %d %d", &n, &idx, &phase, &m.target, &m.database); c != 5 || err != nil || n != inc {
			continue
		}
		m.index, m.end = idx, phase == "end"
		out = append(out, m)
	}
	return out, sc.Err()
}

// spans maps the marks onto text, the end of a file that starts at file
// offset base there: window i runs from its start mark (or the end mark
// of window i-1) to its end mark. A window without an end mark (the one in
// progress when a worker died) has no span; one that began before text's
// start is cut to it.
func (ms incarnationMarks) spans(at func(outputMark) int64, base int64, text []byte) []WindowSpan {
	starts, ends := map[int]int64{}, map[int]int64{}
	var order []int
	for _, m := range ms {
		if m.end {
			if _, ok := ends[m.index]; !ok {
				order = append(order, m.index)
			}
			ends[m.index] = at(m)
		} else if _, ok := starts[m.index]; !ok {
			starts[m.index] = at(m)
		}
	}
	var out []WindowSpan
	for _, i := range order {
		from, ok := starts[i]
		if !ok {
			if from, ok = ends[i-1]; !ok {
				continue
			}
		}
		to := ends[i]
		if to < from || to < base || (to == base && from < base) {
			continue // printed before the kept end, or a file that was replaced
		}
		out = append(out, WindowSpan{Index: i, From: lineStart(text, from-base), To: lineStart(text, to-base)})
	}
	return out
}

// lineStart is offset off in text moved on to the start of a line (a mark
// taken in the middle of a line puts that line in the window it began in),
// clamped to text.
func lineStart(text []byte, off int64) int {
	if off <= 0 {
		return 0
	}
	if off >= int64(len(text)) {
		return len(text)
	}
	if text[off-1] == '\n' {
		return int(off)
	}
	if i := bytes.IndexByte(text[off:], '\n'); i >= 0 {
		return int(off) + i + 1
	}
	return len(text)
}

// fileTail is the last maxBytes of a file from offset from on (0: its
// start), from a line start when there is more; base is the offset of
// the text in the file.
func fileTail(path string, from int64, maxBytes int) (text []byte, base int64, truncated bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	size := fi.Size()
	if from < 0 || from > size {
		from = 0 // a file that was replaced: all of it is new
	}
	if size-from <= int64(maxBytes) {
		b := make([]byte, size-from)
		if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
			return nil, 0, false, err
		}
		return b, from, false, nil
	}
	b := make([]byte, maxBytes)
	if _, err := f.ReadAt(b, size-int64(maxBytes)); err != nil && err != io.EOF {
		return nil, 0, false, err
	}
	kept := fromLineStart(b)
	return kept, size - int64(len(kept)), true, nil
}

// fromLineStart drops a cut first line.
func fromLineStart(b []byte) []byte {
	if i := bytes.IndexByte(b, '\n'); i >= 0 && i+1 < len(b) {
		return b[i+1:]
	}
	return b
}

// Logs reads the target's and the database's container output.
func (d *Docker) Logs(ctx context.Context, env Environment, maxBytes int) ([]Output, error) {
	return d.ReadOutput(ctx, env, LogRequest{MaxBytes: maxBytes})
}

// ReadOutput reads the target's and the database's container output, cut
// by window with the timestamp the engine keeps of each line.
func (d *Docker) ReadOutput(ctx context.Context, env Environment, req LogRequest) ([]Output, error) {
	type proc struct {
		source, id string
		since      time.Time // a restarted target's incarnation starts there
	}
	ids := []proc{{LogTarget, env.Target.ContainerID, env.Target.StartedAt}}
	if env.Database != nil {
		since, _ := time.Parse(time.RFC3339Nano, strings.TrimPrefix(req.DatabaseFrom, "time:"))
		ids = append(ids, proc{LogDatabase, env.Database.Process.ContainerID, since})
	}
	var out []Output
	for _, c := range ids {
		if c.id == "" {
			continue
		}
		o, err := containerOutput(ctx, d.cli, c.id, req, c.since)
		if err != nil {
			return out, fmt.Errorf("logs of %s: %s container %s: %w", env.ID, c.source, shortID(c.id), err)
		}
		o.Source = c.source
		out = append(out, o)
	}
	return out, nil
}

// containerOutput is the last req.MaxBytes of a container's output since
// since. The engine cuts by lines: it is asked for more lines than
// MaxBytes could hold at 40 bytes a line, and the rest cut here.
func containerOutput(ctx context.Context, cli client.APIClient, id string, req LogRequest, since time.Time) (Output, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Timestamps: true, Tail: fmt.Sprint(req.MaxBytes/40 + 1)}
	if !since.IsZero() {
		opts.Since = since.Format(time.RFC3339Nano)
	}
	rc, err := cli.ContainerLogs(ctx, id, opts)
	if err != nil {
		return Output{}, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, int64(4*req.MaxBytes)+1<<20))
	if err != nil {
		return Output{}, err
	}
	text, stamps := stripTimestamps(demux(b))
	o := Output{Text: text}
	if len(text) > req.MaxBytes {
		kept := fromLineStart(text[len(text)-req.MaxBytes:])
		cut := len(text) - len(kept)
		for len(stamps) > 0 && stamps[0].off < cut {
			stamps = stamps[1:]
		}
		for i := range stamps {
			stamps[i].off -= cut
		}
		o.Text, o.Truncated = kept, true
	}
	last := since
	if n := len(stamps); n > 0 {
		last = stamps[n-1].at.Add(time.Nanosecond)
	}
	if !last.IsZero() {
		o.Cursor = "time:" + last.UTC().Format(time.RFC3339Nano)
	}
	o.Windows = stampSpans(stamps, len(o.Text), o.Truncated, req.Windows)
	return o, nil
}

// lineStamp is when the engine received the line at offset off.
type lineStamp struct {
	off int
	at  time.Time
}

// stripTimestamps removes the timestamp the engine put before each line
// (ContainerLogsOptions.Timestamps) and returns where each line starts and
// when it was printed.
func stripTimestamps(b []byte) ([]byte, []lineStamp) {
	out := make([]byte, 0, len(b))
	var stamps []lineStamp
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i+1], b[i+1:]
		} else {
			b = nil
		}
		if sp := bytes.IndexByte(line, ' '); sp > 0 {
			if at, err := time.Parse(time.RFC3339Nano, string(line[:sp])); err == nil {
				stamps = append(stamps, lineStamp{off: len(out), at: at})
				line = line[sp+1:]
			}
		}
		out = append(out, line...)
	}
	return out, stamps
}

// stampSpans cuts text (size bytes, lines at stamps) by the windows'
// times: a window's lines are those printed at or after its start and
// before its end. When the start was cut (truncated), a window that ended
// before the first kept line is left out, and one cut in the middle keeps
// what is left of it.
func stampSpans(stamps []lineStamp, size int, truncated bool, ws []WindowTime) []WindowSpan {
	if len(ws) == 0 {
		return nil
	}
	offAt := func(t time.Time) int { // the first line printed at or after t
		for _, s := range stamps {
			if !s.at.Before(t) {
				return s.off
			}
		}
		return size
	}
	var out []WindowSpan
	for _, w := range ws {
		if truncated && (len(stamps) == 0 || !w.End.After(stamps[0].at)) {
			continue
		}
		out = append(out, WindowSpan{Index: w.Index, From: offAt(w.Start), To: offAt(w.End)})
	}
	return out
}

// Logs reads the output of env's processes with the provider that made it.
func (c *chooser) Logs(ctx context.Context, env Environment, maxBytes int) ([]Output, error) {
	return c.ReadOutput(ctx, env, LogRequest{MaxBytes: maxBytes})
}

// ReadOutput reads the output of env's processes with the provider that made it.
func (c *chooser) ReadOutput(ctx context.Context, env Environment, req LogRequest) ([]Output, error) {
	switch env.Provider {
	case "local":
		return c.local.ReadOutput(ctx, env, req)
	case "docker":
		d, err := c.dockerProvider(ctx)
		if err != nil {
			return nil, fmt.Errorf("logs of %s: %w", env.ID, err)
		}
		return d.ReadOutput(ctx, env, req)
	}
	return nil, nil // url: nothing of the target's is longhaul's to read
}

// MarkOutput marks a local environment's output (a container's lines carry
// their own timestamps: nothing to do).
func (c *chooser) MarkOutput(ctx context.Context, env Environment, index int, end bool) error {
	if env.Provider != "local" {
		return nil
	}
	return c.local.MarkOutput(ctx, env, index, end)
}
