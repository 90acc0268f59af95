package provision

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
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
}

// LogReader is a provisioner that can read what its environments'
// processes printed. The worker keeps it with the run before teardown
// removes it (a local environment's directory, a container).
type LogReader interface {
	// Logs returns the last maxBytes of each process's output; a process
	// whose output is gone is left out.
	Logs(ctx context.Context, env Environment, maxBytes int) ([]Output, error)
}

// Logs reads the target's and the database's output files of a local
// environment (envDir/target.log, envDir/ROLE.log; for an incarnation
// whose target was restarted since, envDir/target.N.log).
func (l *Local) Logs(_ context.Context, env Environment, maxBytes int) ([]Output, error) {
	if err := l.sameHost(env); err != nil {
		return nil, fmt.Errorf("logs of %s: %w", env.ID, err)
	}
	if env.EnvDir == "" {
		return nil, nil
	}
	files := []struct{ source, name string }{{LogTarget, filepath.Base(targetLogName(env.EnvDir, env.Incarnation))}}
	if env.Database != nil && env.Database.Process.PID > 0 {
		files = append(files, struct{ source, name string }{LogDatabase, dbRole(env.Database.Kind) + ".log"})
	}
	var out []Output
	for _, f := range files {
		text, truncated, err := fileTail(filepath.Join(env.EnvDir, f.name), maxBytes)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return out, fmt.Errorf("logs of %s: %w", env.ID, err)
		}
		out = append(out, Output{Source: f.source, Text: text, Truncated: truncated})
	}
	return out, nil
}

// fileTail is the last maxBytes of a file, from a line start when the
// file is longer.
func fileTail(path string, maxBytes int) ([]byte, bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := fi.Size()
	if size <= int64(maxBytes) {
		b, err := io.ReadAll(f)
		return b, false, err
	}
	b := make([]byte, maxBytes)
	if _, err := f.ReadAt(b, size-int64(maxBytes)); err != nil && err != io.EOF {
		return nil, false, err
	}
	return fromLineStart(b), true, nil
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
	type proc struct {
		source, id string
		since      time.Time // a restarted target's incarnation starts there
	}
	ids := []proc{{LogTarget, env.Target.ContainerID, env.Target.StartedAt}}
	if env.Database != nil {
		ids = append(ids, proc{source: LogDatabase, id: env.Database.Process.ContainerID})
	}
	var out []Output
	for _, c := range ids {
		if c.id == "" {
			continue
		}
		text, truncated, err := containerOutput(ctx, d.cli, c.id, maxBytes, c.since)
		if err != nil {
			return out, fmt.Errorf("logs of %s: %s container %s: %w", env.ID, c.source, shortID(c.id), err)
		}
		out = append(out, Output{Source: c.source, Text: text, Truncated: truncated})
	}
	return out, nil
}

// containerOutput is the last maxBytes of a container's output. The
// engine cuts by lines: it is asked for more lines than maxBytes could
// hold at 40 bytes a line, and the rest cut here.
func containerOutput(ctx context.Context, cli client.APIClient, id string, maxBytes int, since time.Time) ([]byte, bool, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: fmt.Sprint(maxBytes/40 + 1)}
	if !since.IsZero() {
		opts.Since = since.Format(time.RFC3339Nano)
	}
	rc, err := cli.ContainerLogs(ctx, id, opts)
	if err != nil {
		return nil, false, err
	}
	defer rc.Close()
	b, err := io.ReadAll(io.LimitReader(rc, int64(4*maxBytes)+1<<20))
	if err != nil {
		return nil, false, err
	}
	b = demux(b)
	if len(b) <= maxBytes {
		return b, false, nil
	}
	return fromLineStart(b[len(b)-maxBytes:]), true, nil
}

// Logs reads the output of env's processes with the provider that made it.
func (c *chooser) Logs(ctx context.Context, env Environment, maxBytes int) ([]Output, error) {
	switch env.Provider {
	case "local":
		return c.local.Logs(ctx, env, maxBytes)
	case "docker":
		d, err := c.dockerProvider(ctx)
		if err != nil {
			return nil, fmt.Errorf("logs of %s: %w", env.ID, err)
		}
		return d.Logs(ctx, env, maxBytes)
	}
	return nil, nil // url: nothing of the target's is longhaul's to read
}
