package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
)

// followTail is how much of what a process printed before FollowLogs
// started is shown first, as `tail -f` shows the end of a file.
const followTail = 16 << 10

// followPoll is how often a local output file is read for new lines.
const followPoll = 200 * time.Millisecond

// LogFollower is a provisioner that can stream what one process of a live
// environment prints (`longhaul logs --follow`).
type LogFollower interface {
	// FollowLogs writes the end of what the source (LogTarget or
	// LogDatabase) printed so far, then what it prints next, until ctx is
	// done or the process's output is gone (its environment torn down).
	FollowLogs(ctx context.Context, env Environment, source string, w io.Writer) error
}

var (
	_ LogFollower = (*chooser)(nil)
	_ LogFollower = (*Local)(nil)
	_ LogFollower = (*Docker)(nil)
)

// FollowLogs tails a local environment's output file (envDir/target.log or
// envDir/ROLE.log). The file is written by the process itself (its stdout
// and stderr are the file), so following it takes nothing from the target
// and survives the worker that started it.
func (l *Local) FollowLogs(ctx context.Context, env Environment, source string, w io.Writer) error {
	if err := l.sameHost(env); err != nil {
		return fmt.Errorf("follow the output of %s: %w", env.ID, err)
	}
	name := "target.log"
	if source == LogDatabase {
		if env.Database == nil || env.Database.Process.PID <= 0 {
			return fmt.Errorf("follow the output of %s: longhaul started no database process in it", env.ID)
		}
		name = dbRole(env.Database.Kind) + ".log"
	}
	if env.EnvDir == "" {
		return fmt.Errorf("follow the output of %s: it has no directory of its own", env.ID)
	}
	return tailFile(ctx, filepath.Join(env.EnvDir, name), w)
}

// tailFile writes the last followTail bytes of path (from a line start),
// then everything appended to it, until ctx is done or the file is removed.
func tailFile(ctx context.Context, path string, w io.Writer) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if size := fi.Size(); size > followTail {
		b := make([]byte, followTail)
		if _, err := f.ReadAt(b, size-followTail); err != nil && err != io.EOF {
			return err
		}
		if _, err := w.Write(fromLineStart(b)); err != nil {
			return err
		}
		if _, err := f.Seek(size, io.SeekStart); err != nil {
			return err
		}
	}
	t := time.NewTicker(followPoll)
	defer t.Stop()
	for {
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		// Torn down: the environment's directory (and the file) is gone.
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil
		}
	}
}

// FollowLogs streams a container's output (stdout and stderr merged) from
// the engine until ctx is done or the container is removed; a restarted
// target's from its restart (Target.StartedAt) on.
func (d *Docker) FollowLogs(ctx context.Context, env Environment, source string, w io.Writer) error {
	id, since := env.Target.ContainerID, env.Target.StartedAt
	if source == LogDatabase {
		id, since = "", time.Time{}
		if env.Database != nil {
			id = env.Database.Process.ContainerID
		}
	}
	if id == "" {
		return fmt.Errorf("follow the output of %s: it has no %s container", env.ID, source)
	}
	opts := client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Follow: true, Tail: fmt.Sprint(followTail / 80)}
	if !since.IsZero() {
		// A restarted target is the same container: without Since its
		// tail would begin with the crashed incarnation's last lines,
		// under the new incarnation's header.
		opts.Since = since.Format(time.RFC3339Nano)
	}
	rc, err := d.cli.ContainerLogs(ctx, id, opts)
	if err != nil {
		return fmt.Errorf("follow the output of %s: %s container %s: %w", env.ID, source, shortID(id), err)
	}
	defer rc.Close()
	// A container without a terminal multiplexes its two streams; both go to w.
	if _, err := stdcopy.StdCopy(w, w, rc); err != nil && ctx.Err() == nil {
		return fmt.Errorf("follow the output of %s: %w", env.ID, err)
	}
	return nil
}

// FollowLogs follows env's process with the provider that made it.
func (c *chooser) FollowLogs(ctx context.Context, env Environment, source string, w io.Writer) error {
	switch env.Provider {
	case "local":
		return c.local.FollowLogs(ctx, env, source, w)
	case "docker":
		d, err := c.dockerProvider(ctx)
		if err != nil {
			return fmt.Errorf("follow the output of %s: %w", env.ID, err)
		}
		return d.FollowLogs(ctx, env, source, w)
	}
	return fmt.Errorf("follow the output of %s: its target is not longhaul's (provider %q): nothing to follow", env.ID, env.Provider)
}

// OutputFollower returns a follower of environments given as the JSON a
// run record keeps (store.Run.Environment), with the provider that made
// each: for `longhaul logs --follow`.
func OutputFollower(opts Options) func(ctx context.Context, env json.RawMessage, source string, w io.Writer) error {
	opts = opts.withDefaults()
	c := &chooser{kind: "auto", opts: opts, local: NewLocal(opts)}
	return func(ctx context.Context, raw json.RawMessage, source string, w io.Writer) error {
		var env Environment
		if err := json.Unmarshal(raw, &env); err != nil {
			return fmt.Errorf("follow the output: the run's environment record: %w", err)
		}
		return c.FollowLogs(ctx, env, source, w)
	}
}
