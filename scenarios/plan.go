package scenarios

import (
	"errors"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// ErrPoolEmpty is returned by Action.Render when the action picks from a pool
// that has no entries yet; the driver counts the pick as skipped, not failed.
var ErrPoolEmpty = errors.New("pool is empty")

// Plan is a compiled scenario, ready to drive. It is safe for concurrent use
// by many VUs; per-VU state lives in VU.
type Plan struct {
	Name  string
	Load  Load
	Setup []*Action
	Ops   []*Action // every op has Weight > 0
	Pools *Pools

	// unexported compiled state
}

// CompileOptions tune Compile. The zero value resolves ${env:NAME} from the
// process environment.
type CompileOptions struct {
	// LookupEnv resolves ${env:NAME} references; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Seed makes random template functions reproducible; 0 picks a random seed.
	Seed uint64
}

// Compile turns a validated scenario into a Plan. It fails (with file:line) on
// an ${env:NAME} that is not set.
func Compile(s *Scenario, opts CompileOptions) (*Plan, error) {
	panic("scenarios.Compile: not implemented yet")
}

// NewVU returns the state of virtual user number id (1-based): its variables
// and random source. A VU is not safe for concurrent use.
func (p *Plan) NewVU(id int) *VU {
	panic("scenarios.Plan.NewVU: not implemented yet")
}

// VU is one virtual user's state: captured variables, random source, id.
type VU struct {
	ID int
	// unexported: variables, rng, ...
}

// Pools are the shared pools that captures append to and templates pick from.
// Safe for concurrent use.
type Pools struct {
	// unexported
}

// Len returns the number of entries in the named pool.
func (p *Pools) Len(name string) int {
	panic("scenarios.Pools.Len: not implemented yet")
}

// Action is one compiled step (setup) or op.
type Action struct {
	Name   string
	Weight int // 0 for setup steps
	Think  Think
	// unexported compiled templates, captures, expectations
}

// Header is one rendered request header.
type Header struct {
	Key   string
	Value []byte
}

// Rendered is a rendered HTTP request. Render reuses its slices, so one
// Rendered per worker makes rendering allocation-free in the steady state.
type Rendered struct {
	Method string
	// PathQuery is the escaped path plus "?query" when there is one.
	PathQuery []byte
	Headers   []Header
	Body      []byte
}

// Render renders the action for vu into r (resetting r first). It returns
// ErrPoolEmpty when a pool it picks from is empty.
func (a *Action) Render(vu *VU, r *Rendered) error {
	panic("scenarios.Action.Render: not implemented yet")
}

// WantsBody reports whether Check needs the response body (the action has
// captures). When false the driver may discard the body unread.
func (a *Action) WantsBody() bool {
	panic("scenarios.Action.WantsBody: not implemented yet")
}

// Check classifies a response and applies the action's captures to vu and the
// plan's pools. A status not in expect is Status4xx or Status5xx for 4xx/5xx
// and Unexpected otherwise; a capture whose field is missing is Unexpected.
// A successful check returns window.OK.
func (a *Action) Check(vu *VU, status int, body []byte) window.Class {
	panic("scenarios.Action.Check: not implemented yet")
}

// ThinkTime draws this action's pause for vu (0 when it has none).
func (a *Action) ThinkTime(vu *VU) time.Duration {
	panic("scenarios.Action.ThinkTime: not implemented yet")
}
