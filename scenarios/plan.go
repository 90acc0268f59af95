package scenarios

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
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

	vars   []string       // VU variable names by index
	varIdx map[string]int // and their indices
	seq    atomic.Uint64  // {{ seq }}
	seed   uint64
}

// CompileOptions tune Compile. The zero value resolves ${env:NAME} from the
// process environment.
type CompileOptions struct {
	// LookupEnv resolves ${env:NAME} references; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)
	// Seed makes random template functions reproducible; 0 picks a random seed.
	Seed uint64
	// MaxPoolEntries bounds each pool; 0 means DefaultMaxPoolEntries.
	MaxPoolEntries int
}

// Compile turns a validated scenario into a Plan. It fails (with file:line) on
// an ${env:NAME} that is not set. The values of ${env:NAME} references live
// only in the Plan's compiled requests: they never appear in its errors.
func Compile(s *Scenario, opts CompileOptions) (*Plan, error) {
	if s == nil {
		return nil, errors.New("compile scenario: nil scenario")
	}
	lookup := opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64() | 1
	}
	p := &Plan{
		Name:   s.Name,
		Load:   s.Load,
		Pools:  newPools(opts.MaxPoolEntries),
		varIdx: map[string]int{},
		seed:   seed,
	}
	c := &compiler{plan: p, lookup: lookup, el: &errorList{file: s.Source}}
	for i := range s.Setup {
		p.Setup = append(p.Setup, c.action(&s.Setup[i], 0, "setup step"))
	}
	if len(s.Ops) == 0 {
		c.el.addf(0, 0, "scenario %q has no ops", s.Name)
	}
	for i := range s.Ops {
		op := &s.Ops[i]
		if op.Weight < 1 {
			c.el.addf(op.Line, 0, "op %q: weight must be ≥ 1, got %d", op.Name, op.Weight)
		}
		p.Ops = append(p.Ops, c.action(&op.Step, op.Weight, "op"))
	}
	if err := c.el.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// compiler turns steps into Actions.
type compiler struct {
	plan   *Plan
	lookup func(string) (string, bool)
	el     *errorList
	// per action being compiled
	step *Step
	what string
}

func (c *compiler) errf(format string, args ...any) {
	c.el.addf(c.step.Line, 0, "%s %q: %s", c.what, c.step.Name, fmt.Sprintf(format, args...))
}

func (c *compiler) action(st *Step, weight int, what string) *Action {
	if st.WebSocket != nil {
		return c.websocket(st, weight, what)
	}
	c.step, c.what = st, what
	r := &st.Request
	a := &Action{Name: st.Name, Weight: weight, Think: st.Think, plan: c.plan, method: strings.ToUpper(r.Method)}
	if a.method == "" {
		a.method = "GET"
	}

	// Path: literal text as written; values inserted before a "?" are escaped
	// as a path segment, after it as a query component.
	if !strings.HasPrefix(r.Path, "/") {
		c.errf("path must start with \"/\", got %q", r.Path)
	}
	parts := c.parse(r.Path)
	inQuery := false
	for _, pt := range parts {
		if pt.kind == partLit {
			a.path = appendLit(a.path, escapePathLiteral(pt.text))
			inQuery = inQuery || strings.Contains(pt.text, "?")
			continue
		}
		esc := escPath
		if inQuery {
			esc = escQuery
		}
		a.path = c.appendPart(a.path, pt, esc)
	}
	a.pathHasQuery = inQuery
	for _, k := range sortedKeys(r.Query) {
		q := queryTmpl{key: appendValue(nil, []byte(k), false, escQuery)}
		q.val = c.segs(nil, r.Query[k], escQuery)
		a.query = append(a.query, q)
	}

	hasContentType := false
	for _, k := range sortedKeys(r.Headers) {
		key := textproto.CanonicalMIMEHeaderKey(k)
		hasContentType = hasContentType || key == "Content-Type"
		a.headers = append(a.headers, headerTmpl{key: key, val: c.segs(nil, r.Headers[k], escHeader)})
	}
	switch {
	case r.JSON != nil:
		a.body = c.json(nil, r.JSON, 0)
		if !hasContentType {
			a.headers = append(a.headers, headerTmpl{key: "Content-Type", val: []seg{{kind: partLit, lit: []byte("application/json")}}})
		}
	case r.Body != "":
		a.body = c.segs(nil, r.Body, escNone)
	}

	for _, cp := range st.Capture {
		cc := capture{path: compilePath(cp.JSON), varIdx: -1, each: cp.Each}
		switch {
		case cp.Var != "" && !cp.Each:
			cc.varIdx = c.varIndex(cp.Var)
		case cp.Each && cp.Pool == "":
			c.errf("capture of %q with each: true needs pool", cp.JSON)
			continue
		case cp.Pool != "":
			cc.pool = c.plan.Pools.get(cp.Pool)
		default:
			c.errf("capture of %q needs var or pool", cp.JSON)
			continue
		}
		a.captures = append(a.captures, cc)
	}
	if len(st.Expect.Status) == 0 {
		for code := 200; code < 400; code++ {
			a.expect.add(code)
		}
	}
	for _, code := range st.Expect.Status {
		if !a.expect.add(code) {
			c.errf("expect status %d is not an HTTP status", code)
		}
	}
	return a
}

func (c *compiler) varIndex(name string) int {
	if i, ok := c.plan.varIdx[name]; ok {
		return i
	}
	c.plan.varIdx[name] = len(c.plan.vars)
	c.plan.vars = append(c.plan.vars, name)
	return len(c.plan.vars) - 1
}

func (c *compiler) parse(s string) []part {
	parts, err := parseTemplate(s)
	if err != nil {
		c.errf("%v", err)
		return nil
	}
	return parts
}

// segs compiles template s, escaping both its text and inserted values for esc.
func (c *compiler) segs(dst []seg, s string, esc escMode) []seg {
	for _, pt := range c.parse(s) {
		if pt.kind == partLit {
			dst = appendLit(dst, appendValue(nil, []byte(pt.text), false, esc))
			continue
		}
		dst = c.appendPart(dst, pt, esc)
	}
	return dst
}

// appendPart compiles one non-literal part.
func (c *compiler) appendPart(dst []seg, pt part, esc escMode) []seg {
	sg := seg{kind: pt.kind, esc: esc, a: pt.a, b: pt.b}
	switch pt.kind {
	case partEnv:
		v, ok := c.lookup(pt.text)
		if !ok {
			c.errf("${env:%s} is not set in the environment", pt.text)
			return dst
		}
		vesc := esc
		if vesc == escJSONValue {
			vesc = escJSONStr // an ${env:} alone in a JSON leaf is a string
			return appendLit(dst, appendValue([]byte{'"'}, []byte(v), false, vesc), []byte{'"'})
		}
		return appendLit(dst, appendValue(nil, []byte(v), false, vesc))
	case partVar:
		sg.idx = c.varIndex(pt.text)
	case partPick, partTake:
		sg.pool = c.plan.Pools.get(pt.text)
	}
	return append(dst, sg)
}

// json compiles a request's json value: structure as literal text, string
// leaves as templates (see README.md for when a leaf renders as a number).
func (c *compiler) json(dst []seg, x any, depth int) []seg {
	if depth > MaxDepth {
		c.errf("json nested deeper than %d levels", MaxDepth)
		return dst
	}
	switch x := x.(type) {
	case string:
		parts := c.parse(x)
		if len(parts) == 1 && parts[0].kind != partLit {
			switch k := parts[0].kind; {
			case k.numeric():
				return c.appendPart(dst, parts[0], escNone)
			case k == partVar || k == partPick || k == partTake || k == partEnv:
				return c.appendPart(dst, parts[0], escJSONValue)
			}
		}
		dst = appendLit(dst, []byte{'"'})
		for _, pt := range parts {
			if pt.kind == partLit {
				dst = appendLit(dst, appendJSONStringBody(nil, []byte(pt.text)))
			} else {
				dst = c.appendPart(dst, pt, escJSONStr)
			}
		}
		return appendLit(dst, []byte{'"'})
	case map[string]any:
		dst = appendLit(dst, []byte{'{'})
		for i, k := range sortedKeys(x) {
			key, _ := json.Marshal(k)
			if i > 0 {
				dst = appendLit(dst, []byte{','})
			}
			dst = appendLit(dst, key, []byte{':'})
			dst = c.json(dst, x[k], depth+1)
		}
		return appendLit(dst, []byte{'}'})
	case []any:
		dst = appendLit(dst, []byte{'['})
		for i, e := range x {
			if i > 0 {
				dst = appendLit(dst, []byte{','})
			}
			dst = c.json(dst, e, depth+1)
		}
		return appendLit(dst, []byte{']'})
	case map[any]any:
		c.errf("json object keys must be strings")
		return dst
	}
	b, err := json.Marshal(x)
	if err != nil {
		c.errf("json value %v: %v", x, err)
		return dst
	}
	return appendLit(dst, b)
}

// appendLit appends literal bytes, merging with a preceding literal segment.
func appendLit(dst []seg, bs ...[]byte) []seg {
	for _, b := range bs {
		if len(b) == 0 {
			continue
		}
		if n := len(dst); n > 0 && dst[n-1].kind == partLit {
			dst[n-1].lit = append(dst[n-1].lit, b...)
			continue
		}
		dst = append(dst, seg{kind: partLit, lit: append([]byte(nil), b...)})
	}
	return dst
}

// NewVU returns the state of virtual user number id (1-based): its variables
// and random source. A VU is not safe for concurrent use, and only works with
// the Actions of the Plan that made it.
func (p *Plan) NewVU(id int) *VU {
	return &VU{
		ID:   id,
		plan: p,
		vars: make([]value, len(p.vars)),
		rng:  rand.New(rand.NewPCG(p.seed, uint64(id))),
	}
}

// VU is one virtual user's state: captured variables, random source, id.
type VU struct {
	ID int

	plan    *Plan
	vars    []value
	rng     *rand.Rand
	scratch []byte
}

// Var returns the value of variable name, as a capture stored it, and whether
// it has been captured. Meant for tests and debugging, not the hot path.
func (vu *VU) Var(name string) (string, bool) {
	i, ok := vu.plan.varIdx[name]
	if !ok || vu.vars[i].b == nil {
		return "", false
	}
	return string(vu.vars[i].b), true
}

// Action is one compiled step (setup) or op.
type Action struct {
	Name   string
	Weight int // 0 for setup steps
	Think  Think

	plan         *Plan
	method       string
	path         []seg
	pathHasQuery bool
	query        []queryTmpl
	headers      []headerTmpl
	body         []seg
	captures     []capture
	expect       statusSet

	// WebSocket is set for a websocket op: Render renders its upgrade
	// request (path, query, headers), the session is WebSocket's.
	WebSocket *WSPlan
}

// seg is one compiled piece of a template.
type seg struct {
	kind partKind
	esc  escMode
	lit  []byte // partLit: already escaped
	idx  int    // partVar: variable index
	pool *pool  // partPick, partTake
	a, b int64  // partRandInt, partRandString
}

type queryTmpl struct {
	key []byte // escaped
	val []seg
}

type headerTmpl struct {
	key string // canonical
	val []seg
}

type capture struct {
	path   []pathElem
	varIdx int   // ≥ 0: capture into this VU variable
	pool   *pool // else into this pool
	each   bool
}

// statusSet is a set of HTTP status codes (0..639), allocation-free to test.
type statusSet [10]uint64

func (s *statusSet) add(code int) bool {
	if code < 100 || code > 599 {
		return false
	}
	s[code>>6] |= 1 << (code & 63)
	return true
}

func (s *statusSet) has(code int) bool {
	return code >= 0 && code < 640 && s[code>>6]&(1<<(code&63)) != 0
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
// ErrPoolEmpty when a pool it picks from is empty. A take that ran before
// the empty pick has already removed its entry.
func (a *Action) Render(vu *VU, r *Rendered) error {
	r.Method = a.method
	r.PathQuery, r.Headers, r.Body = r.PathQuery[:0], r.Headers[:0], r.Body[:0]
	var err error
	if r.PathQuery, err = a.appendSegs(r.PathQuery, a.path, vu); err != nil {
		return err
	}
	sep := byte('?')
	if a.pathHasQuery {
		sep = '&'
	}
	for i := range a.query {
		q := &a.query[i]
		r.PathQuery = append(r.PathQuery, sep)
		r.PathQuery = append(r.PathQuery, q.key...)
		r.PathQuery = append(r.PathQuery, '=')
		if r.PathQuery, err = a.appendSegs(r.PathQuery, q.val, vu); err != nil {
			return err
		}
		sep = '&'
	}
	n := len(a.headers)
	if n <= cap(r.Headers) {
		r.Headers = r.Headers[:n] // keeps the Value buffers of earlier renders
	} else {
		r.Headers = append(r.Headers[:cap(r.Headers)], make([]Header, n-cap(r.Headers))...)
	}
	for i := range a.headers {
		h := &r.Headers[i]
		h.Key = a.headers[i].key
		if h.Value, err = a.appendSegs(h.Value[:0], a.headers[i].val, vu); err != nil {
			return err
		}
	}
	r.Body, err = a.appendSegs(r.Body[:0], a.body, vu)
	return err
}

func (a *Action) appendSegs(dst []byte, segs []seg, vu *VU) ([]byte, error) {
	for i := range segs {
		s := &segs[i]
		switch s.kind {
		case partLit:
			dst = append(dst, s.lit...)
		case partVar:
			v := &vu.vars[s.idx]
			dst = appendValue(dst, v.b, v.lit, s.esc)
		case partVU:
			dst = strconv.AppendInt(dst, int64(vu.ID), 10)
		case partSeq:
			dst = strconv.AppendUint(dst, a.plan.seq.Add(1), 10)
		case partUUID:
			dst = appendUUID(dst, vu.rng)
		case partRandInt:
			span := uint64(s.b-s.a) + 1
			if span == 0 { // the whole int64 range
				dst = strconv.AppendInt(dst, int64(vu.rng.Uint64()), 10)
			} else {
				dst = strconv.AppendInt(dst, s.a+int64(vu.rng.Uint64N(span)), 10)
			}
		case partRandString:
			n := s.a
			if s.b > s.a {
				n += vu.rng.Int64N(s.b - s.a + 1)
			}
			dst = appendRandString(dst, int(n), vu.rng)
		case partPick, partTake:
			var ok bool
			if dst, ok = s.pool.appendRandom(dst, s.esc, vu.rng, s.kind == partTake); !ok {
				return dst, ErrPoolEmpty
			}
		}
	}
	return dst, nil
}

// WantsBody reports whether Check needs the response body (the action has
// captures). When false the driver may discard the body unread.
func (a *Action) WantsBody() bool { return len(a.captures) > 0 }

// Check classifies a response and applies the action's captures to vu and the
// plan's pools. A status not in expect is Status4xx or Status5xx for 4xx/5xx
// and Unexpected otherwise; a capture whose field is missing is Unexpected.
// Captures apply to 2xx responses only (an expected 404 has nothing to
// capture). A successful check returns window.OK.
func (a *Action) Check(vu *VU, status int, body []byte) window.Class {
	if !a.expect.has(status) {
		return window.UnwantedStatus(status)
	}
	if status < 200 || status > 299 {
		return window.OK
	}
	for i := range a.captures {
		if !a.captures[i].apply(vu, body) {
			return window.Unexpected
		}
	}
	return window.OK
}

func (c *capture) apply(vu *VU, body []byte) bool {
	start, end, ok := jsonLookup(body, c.path)
	if !ok {
		return false
	}
	if c.each {
		good := true
		isArray := eachElement(body, start, func(s, e int) {
			var lit, ok bool
			vu.scratch, lit, ok = appendJSONValue(vu.scratch[:0], body, s, e)
			if !ok {
				good = false
				return
			}
			c.pool.add(vu.scratch, lit, vu.rng)
		})
		return isArray && good
	}
	if c.varIdx >= 0 {
		v := &vu.vars[c.varIdx]
		b, lit, ok := appendJSONValue(v.b[:0], body, start, end)
		if !ok {
			return false
		}
		if b == nil {
			b = []byte{} // captured, even if empty
		}
		v.b, v.lit = b, lit
		return true
	}
	var lit bool
	if vu.scratch, lit, ok = appendJSONValue(vu.scratch[:0], body, start, end); !ok {
		return false
	}
	c.pool.add(vu.scratch, lit, vu.rng)
	return true
}

// ThinkTime draws this action's pause for vu (0 when it has none), uniform
// in [Think.Min, Think.Max].
func (a *Action) ThinkTime(vu *VU) time.Duration {
	lo, hi := a.Think.Min.D(), a.Think.Max.D()
	if hi <= lo {
		return max(lo, 0)
	}
	return lo + time.Duration(vu.rng.Int64N(int64(hi-lo)+1))
}
