package report

import (
	"encoding/json"
	"fmt"
	"strings"
)

// recordedEnvironment is the part of a run's recorded environment (the
// provision package's Environment as JSON) that a report shows. It is
// declared here so that report does not link the provisioners.
type recordedEnvironment struct {
	Provider    string  `json:"provider"`
	Host        string  `json:"host"`
	Incarnation int     `json:"incarnation"`
	Target      process `json:"target"`
	Image       string  `json:"image"`
	Commit      string  `json:"commit"`
	Network     string  `json:"network"`
	TargetURL   string  `json:"target_url"`
	Route       string  `json:"route"`
	NetNS       *struct {
		ID  string `json:"id"`
		URL string `json:"url"`
	} `json:"netns"`
	Database *struct {
		Kind    string  `json:"kind"`
		URL     string  `json:"url"`
		Image   string  `json:"image"`
		Process process `json:"process"`
	} `json:"database"`
	Notes []string `json:"notes"`
}

type process struct {
	PID         int    `json:"pid"`
	ContainerID string `json:"container_id"`
}

func (p process) String() string {
	switch {
	case p.ContainerID != "":
		id := p.ContainerID
		if len(id) > 12 {
			id = id[:12]
		}
		return "container " + id
	case p.PID > 0:
		return fmt.Sprintf("pid %d", p.PID)
	}
	return ""
}

// environmentLines describes a run's recorded environment in a few lines:
// provider, host and incarnation; the target's container or process, image
// and commit; the route the driver took to a container (inside its network
// namespace, or its published port); the database's DSN (as recorded: without its password) and
// container or process; the provider's notes. Nothing for a run without one
// or a bare URL target.
func environmentLines(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var e recordedEnvironment
	if err := json.Unmarshal(raw, &e); err != nil || e.Provider == "" || e.Provider == "url" {
		return nil
	}
	head := "environment: " + e.Provider
	if e.Host != "" {
		head += " on " + e.Host
	}
	if e.Incarnation > 0 {
		head += fmt.Sprintf(", incarnation %d", e.Incarnation)
	}
	lines := []string{head}
	var target []string
	if s := e.Target.String(); s != "" {
		target = append(target, s)
	}
	if e.Image != "" {
		target = append(target, "image "+e.Image)
	}
	if e.Commit != "" {
		target = append(target, "commit "+e.Commit)
	}
	if e.Network != "" {
		target = append(target, "network "+e.Network)
	}
	if len(target) > 0 {
		lines = append(lines, "  target:   "+strings.Join(target, ", "))
	}
	switch {
	case e.Route == "netns" && e.NetNS != nil:
		lines = append(lines, "  route:    "+e.NetNS.URL+" inside the container's network namespace "+e.NetNS.ID)
	case e.Route != "":
		lines = append(lines, "  route:    "+e.Route+" "+e.TargetURL)
	}
	if db := e.Database; db != nil {
		var about []string
		if s := db.Process.String(); s != "" {
			about = append(about, s)
		}
		if db.Image != "" {
			about = append(about, "image "+db.Image)
		}
		line := "  database: " + db.Kind
		if db.URL != "" {
			line += " " + db.URL
		}
		if len(about) > 0 {
			line += " (" + strings.Join(about, ", ") + ")"
		}
		lines = append(lines, line)
	}
	for _, n := range e.Notes {
		lines = append(lines, "  note:     "+n)
	}
	return lines
}
