package soakworker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"

	"github.com/longhaul-dev/longhaul/activities"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/store"
)

// provisionAdapter presents a provision.Provisioner as the activities'
// Provisioner. (The activities cannot import package provision: it links
// testcontainers, which the workflow side must not.)
type provisionAdapter struct{ p provision.Provisioner }

func (pa provisionAdapter) Provision(ctx context.Context, req activities.ProvisionRequest) (activities.Environment, error) {
	return toActivityEnvErr(pa.p.Provision(ctx, provisionRequest(req)))
}

func provisionRequest(req activities.ProvisionRequest) provision.Request {
	return provision.Request{
		RunID: req.RunID, Incarnation: req.Incarnation, Spec: req.Spec,
		Provider: req.Provider, ExtraEnv: req.ExtraEnv, Publish: req.Publish, Prebuilt: req.Prebuilt,
	}
}

// toActivityEnvErr converts what a provisioner returned: the (partial)
// environment, and its error before a conversion's.
func toActivityEnvErr(env provision.Environment, err error) (activities.Environment, error) {
	out, cerr := toActivityEnv(env)
	if err != nil {
		return out, err
	}
	return out, cerr
}

func (pa provisionAdapter) Teardown(ctx context.Context, env activities.Environment) error {
	e, err := fromActivityEnv(env)
	if err != nil {
		return err
	}
	return pa.p.Teardown(ctx, e)
}

// ReadOutput reads what env's processes printed, when the provisioner can.
func (pa provisionAdapter) ReadOutput(ctx context.Context, env activities.Environment, req activities.OutputRequest) ([]activities.Output, error) {
	lr, ok := pa.p.(provision.LogReader)
	if !ok {
		return nil, nil
	}
	e, err := fromActivityEnv(env)
	if err != nil {
		return nil, err
	}
	preq := provision.LogRequest{MaxBytes: req.MaxBytes, DatabaseFrom: req.DatabaseFrom}
	for _, w := range req.Windows {
		preq.Windows = append(preq.Windows, provision.WindowTime{Index: w.Index, Start: w.Start, End: w.End})
	}
	outs, err := lr.ReadOutput(ctx, e, preq)
	res := make([]activities.Output, 0, len(outs))
	for _, o := range outs {
		ao := activities.Output{Source: o.Source, Text: o.Text, Truncated: o.Truncated, Cursor: o.Cursor}
		for _, w := range o.Windows {
			ao.Windows = append(ao.Windows, store.LogWindow{Index: w.Index, From: w.From, To: w.To})
		}
		res = append(res, ao)
	}
	return res, err
}

// MarkOutput marks a window in env's output, when the provisioner needs it.
func (pa provisionAdapter) MarkOutput(ctx context.Context, env activities.Environment, index int, end bool) error {
	m, ok := pa.p.(provision.OutputMarker)
	if !ok {
		return nil
	}
	e, err := fromActivityEnv(env)
	if err != nil {
		return err
	}
	return m.MarkOutput(ctx, e, index, end)
}

// RestartTarget starts env's crashed target again, when the provisioner can.
func (pa provisionAdapter) RestartTarget(ctx context.Context, env activities.Environment, req activities.ProvisionRequest) (activities.Environment, error) {
	tr, ok := pa.p.(provision.TargetRestarter)
	if !ok {
		return env, errors.New("this provisioner cannot restart a target")
	}
	e, err := fromActivityEnv(env)
	if err != nil {
		return env, err
	}
	out, err := toActivityEnvErr(tr.RestartTarget(ctx, provisionRequest(req), e))
	// The database is kept, and its DSN with it: Raw has it without the
	// password, which the probes need.
	out.DatabaseURL = env.DatabaseURL
	return out, err
}

// RestartDatabase starts env's stopped database again, when the
// provisioner can.
func (pa provisionAdapter) RestartDatabase(ctx context.Context, env activities.Environment) (activities.Environment, error) {
	dr, ok := pa.p.(provision.DatabaseRestarter)
	if !ok {
		return env, errors.New("this provisioner cannot restart a database")
	}
	e, err := fromActivityEnv(env)
	if err != nil {
		return env, err
	}
	if e.Database != nil {
		// Raw's DSN has no password; the restart connects as the probes do.
		db := *e.Database
		db.URL = env.DatabaseURL
		e.Database = &db
	}
	return toActivityEnvErr(dr.RestartDatabase(ctx, e))
}

func (pa provisionAdapter) Check(ctx context.Context, env activities.Environment) error {
	e, err := fromActivityEnv(env)
	if err != nil {
		return err
	}
	return pa.p.Check(ctx, e)
}

func toActivityEnv(e provision.Environment) (activities.Environment, error) {
	raw, err := json.Marshal(withoutPasswords(e))
	if err != nil {
		return activities.Environment{}, fmt.Errorf("encode environment %s: %w", e.ID, err)
	}
	out := activities.Environment{
		ID: e.ID, RunID: e.RunID, Incarnation: e.Incarnation, Provider: e.Provider, Host: e.Host,
		TargetURL: e.TargetURL, Route: e.Route, NetNS: e.NetNS,
		PID: e.Target.PID, ContainerID: e.Target.ContainerID, Ports: e.Ports, Raw: raw,
	}
	if e.Database != nil {
		out.DatabaseURL, out.DatabaseBackendURL = e.Database.URL, e.Database.BackendURL
		out.DatabasePID, out.DatabaseContainerID = e.Database.Process.PID, e.Database.Process.ContainerID
	}
	out.EnvDir = e.EnvDir
	return out, nil
}

// withoutPasswords is e with the database DSNs' passwords removed. Raw goes
// into the run record, which `longhaul report` prints; teardown and checks
// need no password, and the probes get the full DSN in DatabaseURL.
func withoutPasswords(e provision.Environment) provision.Environment {
	if e.Database == nil {
		return e
	}
	db := *e.Database
	db.URL, db.TargetURL = dsnWithoutPassword(db.URL), dsnWithoutPassword(db.TargetURL)
	e.Database = &db
	return e
}

// dsnWithoutPassword drops the password of a URL-form DSN; anything else
// becomes "" rather than risk keeping a secret.
func dsnWithoutPassword(dsn string) string {
	if dsn == "" {
		return ""
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return ""
	}
	if u.User != nil {
		u.User = url.User(u.User.Username())
	}
	return u.String()
}

func fromActivityEnv(e activities.Environment) (provision.Environment, error) {
	var out provision.Environment
	if len(e.Raw) == 0 {
		return out, errors.New("environment " + e.ID + " has no provisioner description")
	}
	if err := json.Unmarshal(e.Raw, &out); err != nil {
		return out, fmt.Errorf("decode environment %s: %w", e.ID, err)
	}
	return out, nil
}
