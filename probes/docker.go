package probes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// ContainerStats reads a container's cumulative CPU time and memory through
// the Docker Engine API (one-shot stats: one sample, no one-second wait for a
// previous one). It is safe for concurrent use.
type ContainerStats struct {
	cli *client.Client
	id  string
}

// ErrContainerNotRunning is returned when the engine has no running
// container to report on.
var ErrContainerNotRunning = errors.New("container is not running")

// NewContainerStats returns a reader for container id, with the engine
// located as the docker CLI does (DOCKER_HOST, DOCKER_TLS_VERIFY, ...; the
// local socket by default). It does not contact the engine.
func NewContainerStats(id string) (*ContainerStats, error) {
	if id == "" {
		return nil, errors.New("container stats: empty container id")
	}
	cli, err := client.New(client.FromEnv)
	if err != nil {
		return nil, fmt.Errorf("container stats: docker client: %w", err)
	}
	return &ContainerStats{cli: cli, id: id}, nil
}

// Read takes one sample. CPUSeconds is the cgroup's cpuacct usage (every
// process in the container, user+system); RSSBytes is memory usage minus
// inactive page cache, the figure `docker stats` shows (total_inactive_file
// on cgroup v1, inactive_file on v2).
func (c *ContainerStats) Read(ctx context.Context) (ProcessReading, error) {
	res, err := c.cli.ContainerStats(ctx, c.id, client.ContainerStatsOptions{})
	if err != nil {
		return ProcessReading{}, fmt.Errorf("container stats %.12s: %w", c.id, err)
	}
	defer res.Body.Close()
	var st container.StatsResponse
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&st); err != nil {
		return ProcessReading{}, fmt.Errorf("container stats %.12s: decode: %w", c.id, err)
	}
	// A stopped container answers with zero values and a zero read time.
	if st.Read.IsZero() || (st.CPUStats.CPUUsage.TotalUsage == 0 && st.MemoryStats.Usage == 0) {
		return ProcessReading{}, fmt.Errorf("container stats %.12s: %w", c.id, ErrContainerNotRunning)
	}
	return ProcessReading{
		CPUSeconds: float64(st.CPUStats.CPUUsage.TotalUsage) / 1e9,
		RSSBytes:   int64(memoryWithoutCache(st.MemoryStats)),
		Processes:  1,
	}, nil
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

// Close releases the client's connections.
func (c *ContainerStats) Close() error { return c.cli.Close() }
