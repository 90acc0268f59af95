package probes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// ContainerStats reads a container's cumulative CPU time and memory through
// the Docker Engine API. It is safe for concurrent use.
//
// Subtleness ahead: the engine samples a container's cgroup on a one-second
// tick, and every stats request — one-shot included — waits for the next
// tick. Measured on docker 20.10, back-to-back one-shot calls take 1.0–1.3 s
// each, more than a window's probe budget. So ContainerStats instead keeps
// one streaming stats request open (what `docker stats` does) and Read
// returns the newest sample, at most about a second old. The age has a
// fixed phase (the engine's tick), so successive readings are still a
// window apart and each delta covers one window's worth of time, shifted by
// less than a second.
type ContainerStats struct {
	cli *client.Client
	id  string

	startOnce sync.Once
	cancel    context.CancelFunc
	done      chan struct{}

	mu      sync.Mutex
	latest  ProcessReading
	at      time.Time     // the engine's timestamp of latest
	got     time.Time     // when latest arrived
	err     error         // why the stream last ended or failed
	updated chan struct{} // closed and replaced at every sample or error
}

// ErrContainerNotRunning is returned when the engine has no running
// container to report on.
var ErrContainerNotRunning = errors.New("container is not running")

// ContainerStatsMaxAge is the age beyond which the newest sample is not
// used: the stream has stalled or ended.
const ContainerStatsMaxAge = 3 * time.Second

// NewContainerStats returns a reader for container id, with the engine
// located as the docker CLI does (DOCKER_HOST, DOCKER_TLS_VERIFY, ...; the
// local socket by default). It does not contact the engine: the stream
// starts at the first Read.
func NewContainerStats(id string) (*ContainerStats, error) {
	if id == "" {
		return nil, errors.New("container stats: empty container id")
	}
	cli, err := dockerClient()
	if err != nil {
		return nil, fmt.Errorf("container stats: %w", err)
	}
	return &ContainerStats{cli: cli, id: id, updated: make(chan struct{}), done: make(chan struct{})}, nil
}

// Read returns the newest sample, waiting for the first one (or ctx).
// CPUSeconds is the cgroup's CPU usage (every process in the container,
// user+system); RSSBytes is memory usage minus inactive page cache, the
// figure `docker stats` shows (total_inactive_file on cgroup v1,
// inactive_file on v2).
func (c *ContainerStats) Read(ctx context.Context) (ProcessReading, error) {
	return c.ReadNewerThan(ctx, time.Time{})
}

// ReadNewerThan is Read for a sample the engine took after t.
func (c *ContainerStats) ReadNewerThan(ctx context.Context, t time.Time) (ProcessReading, error) {
	c.startOnce.Do(c.start)
	for {
		c.mu.Lock()
		latest, at, got, err, updated := c.latest, c.at, c.got, c.err, c.updated
		c.mu.Unlock()
		fresh := !got.IsZero() && time.Since(got) < ContainerStatsMaxAge
		if fresh && at.After(t) {
			return latest, nil
		}
		if !fresh && err != nil {
			return ProcessReading{}, fmt.Errorf("container stats %.12s: %w", c.id, err)
		}
		select {
		case <-updated:
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return ProcessReading{}, fmt.Errorf("container stats %.12s: no sample: %w", c.id, err)
		case <-c.done:
			return ProcessReading{}, fmt.Errorf("container stats %.12s: closed", c.id)
		}
	}
}

func (c *ContainerStats) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go c.stream(ctx)
}

// stream keeps a streaming stats request open, reopening it a second after
// it ends, until ctx is cancelled.
func (c *ContainerStats) stream(ctx context.Context) {
	defer close(c.done)
	for {
		err := c.streamOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		c.publish(ProcessReading{}, time.Time{}, err)
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return
		}
	}
}

func (c *ContainerStats) streamOnce(ctx context.Context) error {
	res, err := c.cli.ContainerStats(ctx, c.id, client.ContainerStatsOptions{Stream: true})
	if err != nil {
		return err
	}
	defer res.Body.Close()
	dec := json.NewDecoder(res.Body)
	for {
		var st container.StatsResponse
		if err := dec.Decode(&st); err != nil {
			if errors.Is(err, io.EOF) {
				return ErrContainerNotRunning // the engine ends the stream when the container stops
			}
			return fmt.Errorf("decode: %w", err)
		}
		// A stopped container is reported with zero values and no read time.
		if st.Read.IsZero() || (st.CPUStats.CPUUsage.TotalUsage == 0 && st.MemoryStats.Usage == 0) {
			c.publish(ProcessReading{}, time.Time{}, ErrContainerNotRunning)
			continue
		}
		c.publish(ProcessReading{
			CPUSeconds: float64(st.CPUStats.CPUUsage.TotalUsage) / 1e9,
			RSSBytes:   int64(memoryWithoutCache(st.MemoryStats)),
			Processes:  1,
		}, st.Read, nil)
	}
}

// publish records a sample (err == nil) or an error and wakes the readers.
func (c *ContainerStats) publish(r ProcessReading, at time.Time, err error) {
	c.mu.Lock()
	if err == nil {
		c.latest, c.at, c.got, c.err = r, at, time.Now(), nil
	} else {
		c.err = err
		c.got = time.Time{} // the last sample is no longer current
	}
	close(c.updated)
	c.updated = make(chan struct{})
	c.mu.Unlock()
}

// memoryWithoutCache is the docker CLI's calculateMemUsageUnixNoCache.
func memoryWithoutCache(m container.MemoryStats) uint64 {
	if v, ok := m.Stats["total_inactive_file"]; ok && v < m.Usage { // cgroup v1
		return m.Usage - v
	}
	if v := m.Stats["inactive_file"]; v < m.Usage { // cgroup v2
		return m.Usage - v
	}
	return m.Usage
}

// dockerClient connects to the engine as the docker CLI does (DOCKER_HOST,
// DOCKER_TLS_VERIFY, ...; the local socket by default). It contacts nothing.
func dockerClient() (*client.Client, error) {
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("docker client: %w", err)
	}
	return cli, nil
}

// Close stops the stream and releases the client's connections.
func (c *ContainerStats) Close() error {
	c.startOnce.Do(func() { close(c.done) }) // never started: nothing to stop
	if c.cancel != nil {
		c.cancel()
		<-c.done
	}
	return c.cli.Close()
}
