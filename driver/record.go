package driver

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/longhaul-dev/longhaul/equivalence"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// RecordOptions configure Record.
type RecordOptions struct {
	Target *url.URL
	// Protocol and TLS are as in Options.
	Protocol string
	TLS      *scenarios.TLS
	// Plan is the compiled scenario; compile it with the same
	// CompileOptions.Seed on both sides so templates render alike.
	Plan *scenarios.Plan
	// Seed drives the op picks, like Options.Seed.
	Seed uint64
	// Requests is how many requests to send, the setup steps included.
	Requests int
	// Timeout bounds each request (0: the plan's load.timeout, else DefaultTimeout).
	Timeout time.Duration
}

// Record sends a seeded sequence of the plan's requests to the target from
// one virtual user, one at a time — its setup steps, then weighted ops
// picked with opts.Seed — and returns every request with its response. Two
// builds given the same plan seed and opts.Seed receive the same sequence
// (as long as they answer alike: a capture that differs changes what
// follows, which is itself the difference). Picks that find their pool
// empty send nothing and are not counted. Failed requests are recorded
// with Err set, not returned as errors; Record fails only on bad options.
func Record(ctx context.Context, opts RecordOptions) ([]equivalence.Exchange, error) {
	if opts.Plan == nil || len(opts.Plan.Ops) == 0 {
		return nil, invalidf("record: no scenario plan with ops")
	}
	if opts.Requests <= 0 {
		return nil, invalidf("record: requests must be > 0, got %d", opts.Requests)
	}
	ep, err := newEndpoint(ctx, opts.Target)
	if err != nil {
		return nil, err
	}
	if err := ep.setProtocol(opts.Protocol, opts.TLS); err != nil {
		return nil, err
	}
	pk, err := opPicker(opts.Plan)
	if err != nil {
		return nil, invalidf("record: %v", err)
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = opts.Plan.Load.Timeout.D()
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	seed := opts.Seed
	if seed == 0 {
		seed = 1
	}
	rng := newRNG(seed)
	vu := opts.Plan.NewVU(1)
	conn := ep.newConn()
	defer conn.close()
	var req scenarios.Rendered

	out := make([]equivalence.Exchange, 0, opts.Requests)
	send := func(a *scenarios.Action) (bool, error) {
		if a.WebSocket != nil {
			return false, nil // a session, not an exchange to compare
		}
		if err := a.Render(vu, &req); err != nil {
			if errors.Is(err, scenarios.ErrPoolEmpty) {
				return false, nil
			}
			out = append(out, equivalence.Exchange{Op: a.Name, Method: a.Name, Err: "not rendered: " + err.Error()})
			return true, nil
		}
		x := equivalence.Exchange{Op: a.Name, Method: req.Method, Path: string(req.PathQuery)}
		status, body, c := conn.do(&req, true, time.Now().Add(timeout))
		if c == window.OK {
			x.Status = status
			x.Body = append([]byte(nil), body...)
			a.Check(vu, status, body) // captures feed the requests that follow
		} else {
			x.Err = c.String()
		}
		out = append(out, x)
		return true, ctx.Err()
	}
	for _, a := range opts.Plan.Setup {
		if len(out) >= opts.Requests {
			return out, nil
		}
		if _, err := send(a); err != nil {
			return out, err
		}
	}
	// Empty pools make picks send nothing; bound the picks so a scenario
	// whose pools never fill still ends.
	for picks := 0; len(out) < opts.Requests; picks++ {
		if picks > 100*opts.Requests {
			return out, fmt.Errorf("record: %d picks sent only %d requests (pools stay empty)", picks, len(out))
		}
		if _, err := send(opts.Plan.Ops[pk.pick(rng.next())]); err != nil {
			return out, err
		}
	}
	return out, nil
}
