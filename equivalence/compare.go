package equivalence

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Exchange is one request of the sequence and the response it got.
type Exchange struct {
	// Op is the setup step's or op's name.
	Op     string `json:"op"`
	Method string `json:"method"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	Body   []byte `json:"body,omitempty"`
	// Err is set when no response arrived (refused, reset, timeout).
	Err string `json:"err,omitempty"`
}

// Options tune Compare.
type Options struct {
	// Ignore lists JSON paths whose values are not compared (the scenario's
	// compare.ignore): "$.meta.took", "$.items[*].rank", "$..etag".
	Ignore []string
}

// Placeholders for generated values. Ids and UUIDs are numbered by first
// appearance within a side, so "the id created by request 3 is the one
// request 9 gets" is still compared; timestamps are not numbered (two
// events in the same microsecond on one side and not on the other are
// no difference).
const (
	phID        = "<id#%d>"
	phUUID      = "<uuid#%d>"
	phToken     = "<token#%d>"
	phTimestamp = "<timestamp>"
)

// Compare compares two sides' exchanges, request by request, and returns the
// first difference. Both sides must have sent the same sequence (same
// seed); a side that answered fewer requests differs at the first missing one.
func Compare(a, b []Exchange, opts Options) (Result, error) {
	ign, err := compileIgnores(opts.Ignore)
	if err != nil {
		return Result{}, err
	}
	na, nb := newNormalizer(), newNormalizer()
	n := max(len(a), len(b))
	for i := range n {
		if i >= len(a) || i >= len(b) {
			x := exchangeAt(a, b, i)
			d := &Difference{Request: i + 1, Op: x.Op, Method: x.Method, Path: x.Path, What: "missing",
				A: answered(a, i), B: answered(b, i)}
			return Result{Status: Different, Requests: min(len(a), len(b)), FirstDifference: d}, nil
		}
		if d := compareOne(&a[i], &b[i], na, nb, ign); d != nil {
			d.Request = i + 1
			return Result{Status: Different, Requests: n, FirstDifference: d}, nil
		}
	}
	return Result{Status: Identical, Requests: n}, nil
}

func exchangeAt(a, b []Exchange, i int) Exchange {
	if i < len(a) {
		return a[i]
	}
	return b[i]
}

func answered(xs []Exchange, i int) string {
	if i < len(xs) {
		return "status " + strconv.Itoa(xs[i].Status)
	}
	return "(no request)"
}

func compareOne(a, b *Exchange, na, nb *normalizer, ign []ignorePath) *Difference {
	d := &Difference{Op: a.Op, Method: a.Method, Path: a.Path}
	if a.Op != b.Op || a.Method != b.Method {
		d.What = "request"
		d.A, d.B = a.Op+" "+a.Method+" "+a.Path, b.Op+" "+b.Method+" "+b.Path
		return d
	}
	if a.Err != "" || b.Err != "" {
		if a.Err != "" && b.Err != "" {
			return nil // neither answered: no difference in what they answered
		}
		d.What = "error"
		d.A, d.B = errOrStatus(a), errOrStatus(b)
		return d
	}
	if a.Status != b.Status {
		d.What = "status"
		d.A, d.B = strconv.Itoa(a.Status), strconv.Itoa(b.Status)
		return d
	}
	va, okA := parseJSON(a.Body)
	vb, okB := parseJSON(b.Body)
	if !okA || !okB {
		if bytes.Equal(a.Body, b.Body) {
			return nil
		}
		d.What = "body"
		d.A, d.B = shorten(string(a.Body)), shorten(string(b.Body))
		return d
	}
	va = na.normalize(va, "", ign, "$")
	vb = nb.normalize(vb, "", ign, "$")
	if path, x, y, same := diff(va, vb, "$"); !same {
		d.What = "body"
		d.JSONPath, d.A, d.B = path, x, y
		return d
	}
	return nil
}

func errOrStatus(x *Exchange) string {
	if x.Err != "" {
		return "error: " + x.Err
	}
	return "status " + strconv.Itoa(x.Status)
}

func parseJSON(b []byte) (any, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	return v, true
}

// normalizer replaces one side's generated values by placeholders.
type normalizer struct {
	ids, uuids, tokens map[string]int
}

func newNormalizer() *normalizer {
	return &normalizer{ids: map[string]int{}, uuids: map[string]int{}, tokens: map[string]int{}}
}

var (
	uuidRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
	// RFC 3339 / ISO 8601 date-times: 2025-03-01T12:00:00Z, with fractions
	// and offsets, or a space instead of the T.
	timeRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$`)
	// Keys whose values a server generates: id, ids, user_id, itemId, token, session ...
	idKeyRE    = regexp.MustCompile(`(?i)^(id|ids|uuid|guid)$|_(id|ids|uuid)$|[a-z](Id|Ids|ID|IDs|Uuid)$`)
	tokenKeyRE = regexp.MustCompile(`(?i)(^|_)(token|session|session_token|sessiontoken|secret|nonce|etag)$|[a-z](Token|Session)$`)
)

// normalize returns v with generated values replaced. key is the object key
// v sits under ("" for array elements inherit their array's key).
func (n *normalizer) normalize(v any, key string, ign []ignorePath, path string) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			p := path + "." + k
			if ignored(ign, p) {
				continue
			}
			out[k] = n.normalize(e, k, ign, p)
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for i, e := range x {
			p := path + "[" + strconv.Itoa(i) + "]"
			if ignored(ign, p) {
				continue
			}
			out = append(out, n.normalize(e, key, ign, p))
		}
		return out
	case string:
		switch {
		case uuidRE.MatchString(x):
			return number(n.uuids, phUUID, x)
		case timeRE.MatchString(x):
			return phTimestamp
		case tokenKeyRE.MatchString(key):
			return number(n.tokens, phToken, x)
		case idKeyRE.MatchString(key):
			return number(n.ids, phID, x)
		}
		return x
	case json.Number:
		if idKeyRE.MatchString(key) {
			return number(n.ids, phID, x.String())
		}
		return x
	}
	return v
}

func number(seen map[string]int, format, v string) string {
	i, ok := seen[v]
	if !ok {
		i = len(seen) + 1
		seen[v] = i
	}
	return fmt.Sprintf(format, i)
}

// diff returns the first path where a and b differ (keys in sorted order),
// with both values there as JSON text.
func diff(a, b any, path string) (string, string, string, bool) {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return path, text(a), text(b), false
		}
		keys := make([]string, 0, len(x)+len(y))
		for k := range x {
			keys = append(keys, k)
		}
		for k := range y {
			if _, dup := x[k]; !dup {
				keys = append(keys, k)
			}
		}
		slices.Sort(keys)
		for _, k := range keys {
			p := path + "." + k
			ex, okx := x[k]
			ey, oky := y[k]
			switch {
			case !okx:
				return p, "(absent)", text(ey), false
			case !oky:
				return p, text(ex), "(absent)", false
			}
			if p, s, t, same := diff(ex, ey, p); !same {
				return p, s, t, false
			}
		}
		return "", "", "", true
	case []any:
		y, ok := b.([]any)
		if !ok {
			return path, text(a), text(b), false
		}
		for i := range min(len(x), len(y)) {
			if p, s, t, same := diff(x[i], y[i], path+"["+strconv.Itoa(i)+"]"); !same {
				return p, s, t, false
			}
		}
		if len(x) != len(y) {
			return path, fmt.Sprintf("%d elements", len(x)), fmt.Sprintf("%d elements", len(y)), false
		}
		return "", "", "", true
	}
	if text(a) != text(b) {
		return path, text(a), text(b), false
	}
	return "", "", "", true
}

// text is v as compact JSON, shortened for a report line.
func text(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // "<id#1>", not "\u003cid#1\u003e"
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return shorten(strings.TrimSuffix(b.String(), "\n"))
}

const maxValueText = 120

func shorten(s string) string {
	if len(s) <= maxValueText {
		return s
	}
	cut := maxValueText
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// ignorePath is one compiled compare.ignore path: steps of keys, "*" (any
// key or index) and "**" (any depth, from $..name).
type ignorePath []string

// compileIgnores parses paths of the form $.a.b, $.a[*].b, $.a[2], $..b.
func compileIgnores(paths []string) ([]ignorePath, error) {
	var out []ignorePath
	for _, p := range paths {
		ip, err := compileIgnore(p)
		if err != nil {
			return nil, err
		}
		out = append(out, ip)
	}
	return out, nil
}

// CheckIgnore reports whether p is a JSON path compare.ignore accepts.
func CheckIgnore(p string) error {
	_, err := compileIgnore(p)
	return err
}

func compileIgnore(p string) (ignorePath, error) {
	bad := func(why string) error {
		return fmt.Errorf("compare.ignore %q: %s (use $.key, $.list[*].key, $.list[0], $..key)", p, why)
	}
	rest, ok := strings.CutPrefix(p, "$")
	if !ok {
		return nil, bad("must start with $")
	}
	var steps ignorePath
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, ".."):
			rest = rest[2:]
			steps = append(steps, "**")
			k, r := cutKey(rest)
			if k == "" {
				return nil, bad("a name must follow ..")
			}
			steps, rest = append(steps, k), r
		case rest[0] == '.':
			k, r := cutKey(rest[1:])
			if k == "" {
				return nil, bad("a name must follow .")
			}
			steps, rest = append(steps, k), r
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, bad("unclosed [")
			}
			in := rest[1:end]
			if in != "*" {
				if _, err := strconv.Atoi(in); err != nil {
					in = strings.Trim(in, `'"`)
					if in == "" {
						return nil, bad("empty []")
					}
				}
			}
			steps, rest = append(steps, in), rest[end+1:]
		default:
			return nil, bad("unexpected " + strconv.Quote(rest[:1]))
		}
	}
	if len(steps) == 0 {
		return nil, bad("ignores the whole body")
	}
	return steps, nil
}

func cutKey(s string) (string, string) {
	i := strings.IndexAny(s, ".[")
	if i < 0 {
		return s, ""
	}
	return s[:i], s[i:]
}

// ignored reports whether the concrete path (as normalize builds it:
// $.items[3].title) matches one of ign.
func ignored(ign []ignorePath, path string) bool {
	if len(ign) == 0 {
		return false
	}
	steps := splitPath(path)
	for _, ip := range ign {
		if match(ip, steps) {
			return true
		}
	}
	return false
}

func splitPath(path string) []string {
	var steps []string
	rest := strings.TrimPrefix(path, "$")
	for rest != "" {
		if rest[0] == '.' {
			k, r := cutKey(rest[1:])
			steps, rest = append(steps, k), r
			continue
		}
		end := strings.IndexByte(rest, ']')
		steps, rest = append(steps, rest[1:end]), rest[end+1:]
	}
	return steps
}

func match(pat, steps []string) bool {
	if len(pat) == 0 {
		return len(steps) == 0
	}
	if pat[0] == "**" {
		for i := 0; i <= len(steps); i++ {
			if match(pat[1:], steps[i:]) {
				return true
			}
		}
		return false
	}
	if len(steps) == 0 {
		return false
	}
	if pat[0] != "*" && pat[0] != steps[0] {
		return false
	}
	return match(pat[1:], steps[1:])
}
