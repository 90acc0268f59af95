package scenarios

import (
	"fmt"
	"net/textproto"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/window"
)

// WebSocket is an op that holds a WebSocket session: connect (an upgrade
// request to Path with Headers, offering Subprotocols; all templated, so a
// token captured in setup authenticates), run Steps in order, then stay
// open for Hold, pinging every Ping, and close. In YAML:
//
//	websocket:
//	  path: /ws/echo
//	  headers: {Authorization: "Bearer {{ .token }}"}
//	  steps:
//	    - send: {json: {type: hello, n: "{{ randInt 1 100 }}"}}
//	    - expect: {json: type, equals: hello, timeout: 2s}
//	      name: hello
//	    - sleep: 500ms
//	    - close: {}
//	  hold: 10m
//	  ping: 1s
type WebSocket struct {
	Path         string            `yaml:"path" json:"path"`
	Headers      map[string]string `yaml:"headers" json:"headers,omitempty"`
	Subprotocols []string          `yaml:"subprotocols" json:"subprotocols,omitempty"`
	Steps        []WSStep          `yaml:"steps" json:"steps,omitempty"`
	// Hold keeps the session open after the steps, as a client that stays
	// connected does; the run's end closes it earlier.
	Hold Duration `yaml:"hold" json:"hold,omitempty"`
	// Ping sends a ping every Ping while the session is open and times its
	// pong; a pong that has not come by the next ping (or the load timeout,
	// if shorter) is a pong timeout.
	Ping Duration `yaml:"ping" json:"ping,omitempty"`
}

// WSStep is one step of a session's script: exactly one of Send, Expect,
// Sleep and Close. Name names an expect step's latency series
// ("OP.NAME"); the default is "stepN" (N from 1).
type WSStep struct {
	Name   string    `yaml:"name" json:"name,omitempty"`
	Send   *WSSend   `yaml:"send" json:"send,omitempty"`
	Expect *WSExpect `yaml:"expect" json:"expect,omitempty"`
	Sleep  Duration  `yaml:"sleep" json:"sleep,omitempty"`
	Close  *WSClose  `yaml:"close" json:"close,omitempty"`
}

// WSSend sends one text message: Text (a template) or JSON (like a
// request's json: string leaves are templates).
type WSSend struct {
	Text string `yaml:"text" json:"text,omitempty"`
	JSON any    `yaml:"json" json:"json,omitempty"`
}

// WSExpect waits up to Timeout (default load.timeout) for a message that
// has the JSON field at the dotted path JSON (equal to Equals when set)
// and/or matches Regexp; messages that do not match (a server's pushes)
// are counted and skipped. Its latency runs from the previous send (or
// the connect). Capture applies to the matching message as to a response.
type WSExpect struct {
	JSON    string    `yaml:"json" json:"json,omitempty"`
	Equals  *string   `yaml:"equals" json:"equals,omitempty"`
	Regexp  string    `yaml:"regexp" json:"regexp,omitempty"`
	Timeout Duration  `yaml:"timeout" json:"timeout,omitempty"`
	Capture []Capture `yaml:"capture" json:"capture,omitempty"`
}

// WSClose closes the session with Code (default 1000) and Reason.
type WSClose struct {
	Code   int    `yaml:"code" json:"code,omitempty"`
	Reason string `yaml:"reason" json:"reason,omitempty"`
}

// WSStepKind is what a compiled step does.
type WSStepKind uint8

// Step kinds.
const (
	WSSendStep WSStepKind = iota
	WSExpectStep
	WSSleepStep
	WSCloseStep
)

// WSPlan is a compiled websocket op (Action.WebSocket).
type WSPlan struct {
	Subprotocols []string
	Steps        []*WSAction
	Hold, Ping   time.Duration
}

// WSAction is one compiled step.
type WSAction struct {
	Name string
	Kind WSStepKind
	// Sleep is a sleep step's pause; Timeout an expect step's wait.
	Sleep, Timeout time.Duration
	// CloseCode and CloseReason are a close step's.
	CloseCode   int
	CloseReason string

	send      *Action // send: renders the message as its body
	path      []pathElem
	equals    []byte
	hasEquals bool
	re        *regexp.Regexp
	capture   *Action // expect: applies the captures
}

// RenderMessage renders a send step's message into r.Body for vu.
func (s *WSAction) RenderMessage(vu *VU, r *Rendered) error {
	return s.send.Render(vu, r)
}

// Match reports whether msg is the message an expect step waits for and,
// when it is, applies the step's captures: window.OK, or Unexpected when a
// capture's field is missing.
func (s *WSAction) Match(vu *VU, msg []byte) (bool, window.Class) {
	if s.re != nil && !s.re.Match(msg) {
		return false, 0
	}
	if s.path != nil {
		start, end, ok := jsonLookup(msg, s.path)
		if !ok {
			return false, 0
		}
		if s.hasEquals {
			var v []byte
			if vu.scratch, _, ok = appendJSONValue(vu.scratch[:0], msg, start, end); !ok {
				return false, 0
			}
			v = vu.scratch
			if string(v) != string(s.equals) {
				return false, 0
			}
		}
	}
	return true, s.capture.Check(vu, 200, msg)
}

// websocket compiles a websocket op: its upgrade request as the Action
// itself, each step as a WSAction.
func (c *compiler) websocket(st *Step, weight int, what string) *Action {
	ws := st.WebSocket
	upgrade := &Step{Name: st.Name, Line: st.Line, Think: st.Think,
		Request: Request{Method: "GET", Path: ws.Path, Headers: ws.Headers}}
	a := c.action(upgrade, weight, what)
	p := &WSPlan{Subprotocols: ws.Subprotocols, Hold: ws.Hold.D(), Ping: ws.Ping.D()}
	for i := range ws.Steps {
		s := &ws.Steps[i]
		w := &WSAction{Name: s.Name}
		if w.Name == "" {
			w.Name = fmt.Sprintf("step%d", i+1)
		}
		sub := func(req Request, capture []Capture) *Action {
			return c.action(&Step{Name: st.Name, Line: st.Line, Request: req, Capture: capture}, 0, what)
		}
		switch {
		case s.Send != nil:
			w.Kind = WSSendStep
			w.send = sub(Request{Path: "/", Body: s.Send.Text, JSON: s.Send.JSON}, nil)
		case s.Expect != nil:
			e := s.Expect
			w.Kind, w.Timeout = WSExpectStep, e.Timeout.D()
			if w.Timeout <= 0 {
				w.Timeout = c.plan.Load.Timeout.D()
			}
			if w.Timeout <= 0 {
				w.Timeout = DefaultTimeout.D()
			}
			if e.JSON != "" {
				w.path = compilePath(e.JSON)
			}
			if e.Equals != nil {
				w.equals, w.hasEquals = []byte(*e.Equals), true
			}
			if e.Regexp != "" {
				re, err := regexp.Compile(e.Regexp)
				if err != nil {
					c.step, c.what = st, what
					c.errf("expect regexp: %v", err)
				}
				w.re = re
			}
			w.capture = sub(Request{Path: "/"}, e.Capture)
		case s.Close != nil:
			w.Kind, w.CloseCode, w.CloseReason = WSCloseStep, s.Close.Code, s.Close.Reason
			if w.CloseCode == 0 {
				w.CloseCode = 1000
			}
		default:
			w.Kind, w.Sleep = WSSleepStep, s.Sleep.D()
		}
		p.Steps = append(p.Steps, w)
	}
	a.WebSocket = p
	return a
}

// headersSetByWebSocket are the upgrade's own headers.
var headersSetByWebSocket = []string{"Upgrade", "Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Protocol", "Sec-Websocket-Extensions"}

// validateWebSocket checks a websocket op.
func (v *validator) validateWebSocket(base []any, st *Step, label string) {
	ws := st.WebSocket
	wp := join(base, "websocket")
	if base[0] == "setup" {
		v.errf(wp, "%s: websocket is for ops; setup steps are HTTP requests", label)
		return
	}
	if v.has(join(base, "request")...) || len(st.Capture) > 0 || len(st.Expect.Status) > 0 {
		v.errf(wp, "%s: a websocket op has no request, capture or expect of its own (use the steps' expect and capture)", label)
	}
	switch {
	case ws.Path == "":
		v.errf(wp, "%s: websocket.path is required (path: /ws)", label)
	case !strings.HasPrefix(ws.Path, "/"):
		v.errf(join(wp, "path"), "%s: websocket.path must start with \"/\", got %q", label, ws.Path)
	default:
		v.template(join(wp, "path"), ws.Path)
	}
	for _, k := range sortedKeys(ws.Headers) {
		hp := join(wp, "headers", k)
		ck := textproto.CanonicalMIMEHeaderKey(k)
		switch {
		case !validHeaderKey(k):
			v.errf(hp, "%s: %q is not a valid header name", label, k)
		case slices.Contains(headersSetByDriver, ck), slices.Contains(headersSetByWebSocket, ck):
			v.errf(hp, "%s: header %s is set by the WebSocket client", label, k)
		}
		v.template(hp, ws.Headers[k])
	}
	for i, sp := range ws.Subprotocols {
		if sp == "" || strings.ContainsAny(sp, " ,\t\"") {
			v.errf(join(wp, "subprotocols", i), "%s: subprotocol %q is not a token", label, sp)
		}
	}
	if ws.Hold < 0 || ws.Ping < 0 {
		v.errf(wp, "%s: websocket hold and ping must be ≥ 0", label)
	}
	if len(ws.Steps) == 0 && ws.Hold <= 0 {
		v.errf(wp, "%s: a websocket op needs steps or hold (or both)", label)
	}
	names := map[string]bool{}
	for i := range ws.Steps {
		s := &ws.Steps[i]
		sp := join(wp, "steps", i)
		n := 0
		for _, k := range []string{"send", "expect", "sleep", "close"} {
			if v.has(join(sp, k)...) {
				n++
			}
		}
		if v.loc.root == nil { // built in code: count what is set
			n = 0
			for _, set := range []bool{s.Send != nil, s.Expect != nil, s.Sleep != 0, s.Close != nil} {
				if set {
					n++
				}
			}
		}
		if n != 1 {
			v.errf(sp, "%s: websocket step %d needs exactly one of send, expect, sleep, close", label, i+1)
			continue
		}
		if s.Name != "" {
			if names[s.Name] {
				v.errf(join(sp, "name"), "%s: websocket step name %q is used twice", label, s.Name)
			}
			names[s.Name] = true
		}
		switch {
		case s.Send != nil:
			switch {
			case s.Send.JSON != nil && s.Send.Text != "":
				v.errf(join(sp, "send"), "%s: send has both text and json; keep one", label)
			case s.Send.JSON != nil:
				s.Send.JSON = v.jsonValue(join(sp, "send", "json"), s.Send.JSON, 0)
			case s.Send.Text != "":
				v.template(join(sp, "send", "text"), s.Send.Text)
			default:
				v.errf(join(sp, "send"), "%s: send needs text or json", label)
			}
		case s.Expect != nil:
			e := s.Expect
			ep := join(sp, "expect")
			if e.JSON == "" && e.Regexp == "" {
				v.errf(ep, "%s: expect needs json (a field's dotted path) or regexp", label)
			}
			if e.Equals != nil && e.JSON == "" {
				v.errf(join(ep, "equals"), "%s: expect equals compares the json field; set json", label)
			}
			if e.Regexp != "" {
				if _, err := regexp.Compile(e.Regexp); err != nil {
					v.errf(join(ep, "regexp"), "%s: expect regexp: %v", label, err)
				}
			}
			if e.Timeout < 0 {
				v.errf(join(ep, "timeout"), "%s: expect timeout must be ≥ 0", label)
			}
			for ci, c := range e.Capture {
				cp := join(ep, "capture", ci)
				switch {
				case c.JSON == "":
					v.errf(cp, "%s: capture %d needs json", label, ci+1)
				case c.Var != "" && c.Pool == "" && !c.Each:
					v.capVars[c.Var] = true
				case c.Pool != "" && c.Var == "":
					v.capPools[c.Pool] = true
				default:
					v.errf(cp, "%s: capture %d needs var or pool (one of them)", label, ci+1)
				}
			}
		case s.Close != nil:
			if c := s.Close.Code; c != 0 && c != 1000 && (c < 3000 || c > 4999) {
				v.errf(join(sp, "close", "code"), "%s: close code %d: use 1000 or an application code 3000–4999", label, c)
			}
			if i != len(ws.Steps)-1 {
				v.errf(sp, "%s: close must be the last step", label)
			}
			if ws.Hold > 0 {
				v.errf(join(wp, "hold"), "%s: hold after a close step: nothing is left open to hold", label)
			}
		default:
			if s.Sleep < 0 {
				v.errf(join(sp, "sleep"), "%s: sleep must be ≥ 0", label)
			}
		}
	}
}
