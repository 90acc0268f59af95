package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Limits that keep a hostile or broken file from costing more than a
// fraction of a second to refuse.
const (
	// MaxFileBytes is the largest scenario file accepted (1 MiB).
	MaxFileBytes = 1 << 20
	// MaxDepth is the deepest nesting of mappings and lists accepted.
	MaxDepth = 64
	// MaxNodes bounds the YAML nodes visited with every alias expanded, which
	// refuses "billion laughs" documents before anything is decoded. Files
	// with more structural bytes (lines, commas, brackets, colons, dashes)
	// than this are refused before they are parsed, which bounds the
	// parser's own work.
	MaxNodes = 100_000
)

// Defaults filled in by Parse.
const (
	DefaultVUs      = 16
	DefaultMaxVUs   = 100
	DefaultDuration = Duration(time.Minute)
	DefaultWindow   = Duration(10 * time.Second)
	DefaultTimeout  = Duration(30 * time.Second)
)

// LoadFile reads and parses the scenario file at path. Problems are returned as
// Errors, each with the file and line.
func LoadFile(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Errors{{File: path, Msg: "cannot read: " + unwrapPathError(err)}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, Errors{{File: path, Msg: "cannot read: " + unwrapPathError(err)}}
	}
	s, err := Parse(data, path)
	if err != nil {
		return nil, err
	}
	if abs, err := filepath.Abs(filepath.Dir(path)); err == nil {
		s.ResolvePaths(abs)
	}
	return s, nil
}

func unwrapPathError(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse parses and validates a scenario from data; source names it in errors
// (a file path, or "" for none). It returns every problem found as Errors,
// and the scenario with defaults filled in when there is none.
func Parse(data []byte, source string) (*Scenario, error) {
	el := &errorList{file: source}
	if len(data) > MaxFileBytes {
		el.addf(0, 0, "file is larger than %d bytes (1 MiB); scenario files are small", MaxFileBytes)
		return nil, el.err()
	}
	if structuralBytes(data) > MaxNodes {
		el.addf(0, 0, "file has more than %d lines, commas, brackets, colons and dashes; scenario files are small", MaxNodes)
		return nil, el.err()
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			el.addf(0, 0, "file is empty; a scenario needs at least name and ops")
		} else {
			addYAMLError(el, err)
		}
		return nil, el.err()
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		el.addf(extra.Line, extra.Column, "more than one YAML document; a scenario file holds one")
		return nil, el.err()
	} else if !errors.Is(err, io.EOF) {
		addYAMLError(el, err)
		return nil, el.err()
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if errs := checkTree(root); len(errs) > 0 {
		// Repeated keys make the decoder skip the whole mapping, which would
		// only add confusing errors: report them alone.
		for _, e := range errs {
			el.addf(e.line, 0, "%s", e.msg)
		}
		return nil, el.err()
	}
	if root.Kind != yaml.MappingNode {
		el.addf(root.Line, root.Column, "a scenario is a mapping with keys name, load, setup, ops, environment, probes, thresholds, compare; got a %s", kindName(root))
		return nil, el.err()
	}

	s := &Scenario{Source: source}
	strict := yaml.NewDecoder(bytes.NewReader(data))
	strict.KnownFields(true)
	if err := strict.Decode(s); err != nil {
		addYAMLError(el, err)
	}
	decodeErrs := len(el.errs)

	loc := locator{root: root}
	setLines(s, loc)
	v := validator{el: el, loc: loc, s: s}
	v.validate()

	if decodeErrs > 0 {
		// A value the decoder refused is left zero in s; drop the semantic
		// errors it causes on the same line, which would only repeat it.
		bad := map[int]bool{}
		for _, e := range el.errs[:decodeErrs] {
			bad[e.Line] = true
		}
		kept := el.errs[:decodeErrs]
		for _, e := range el.errs[decodeErrs:] {
			if !bad[e.Line] {
				kept = append(kept, e)
			}
		}
		el.errs = kept
	}
	if err := el.err(); err != nil {
		return nil, err
	}
	return s, nil
}

// setLines records each step's line for later messages (Compile).
func setLines(s *Scenario, loc locator) {
	for i := range s.Setup {
		s.Setup[i].Line, _ = loc.at("setup", i)
	}
	for i := range s.Ops {
		s.Ops[i].Line, _ = loc.at("ops", i)
	}
	for i := range s.Thresholds {
		s.Thresholds[i].Line, _ = loc.at("thresholds", i)
	}
}

// structuralBytes counts the bytes that can start or separate YAML nodes: an
// upper bound, within a small factor, of the nodes the parser would build.
func structuralBytes(data []byte) int {
	n := 0
	for _, c := range []byte("\n,[{:-") {
		n += bytes.Count(data, []byte{c}) // vectorised: ~0.1 ms per MiB each
	}
	return n
}

type treeError struct {
	line int
	msg  string
}

// checkTree walks the node tree with every alias expanded, refusing trees
// deeper than MaxDepth or larger than MaxNodes, and reports repeated mapping
// keys. It stops as soon as a budget is spent, so an alias bomb costs at most
// MaxNodes steps.
func checkTree(root *yaml.Node) []treeError {
	budget := MaxNodes
	var dups []treeError
	var walk func(n *yaml.Node, depth int) *treeError
	walk = func(n *yaml.Node, depth int) *treeError {
		if depth > MaxDepth {
			return &treeError{n.Line, fmt.Sprintf("nesting deeper than %d levels", MaxDepth)}
		}
		budget--
		if budget < 0 {
			return &treeError{n.Line, fmt.Sprintf("document expands to more than %d nodes (aliases?); scenario files are small", MaxNodes)}
		}
		switch n.Kind {
		case yaml.AliasNode:
			if n.Alias == nil {
				return &treeError{n.Line, "alias without anchor"}
			}
			return walk(n.Alias, depth+1)
		case yaml.MappingNode:
			seen := make(map[string]int, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i]
				if k.Kind != yaml.ScalarNode || k.Value == "<<" {
					continue
				}
				if first, ok := seen[k.Value]; ok {
					dups = append(dups, treeError{k.Line, fmt.Sprintf("key %q repeated (first at line %d)", k.Value, first)})
				} else {
					seen[k.Value] = k.Line
				}
			}
		}
		for _, c := range n.Content {
			if err := walk(c, depth+1); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(root, 0); err != nil {
		return []treeError{*err}
	}
	return dups
}

var (
	lineRE       = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownKeyRE = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
	cannotRE     = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (.+)$")
	repeatedRE   = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
)

// addYAMLError turns a yaml.v3 error into Errors with lines, rewording the
// decoder's Go-flavoured messages for a scenario author.
func addYAMLError(el *errorList, err error) {
	var te *yaml.TypeError
	var msgs []string
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	for _, m := range msgs {
		line := 0
		if sub := lineRE.FindStringSubmatch(m); sub != nil {
			line, _ = strconv.Atoi(sub[1])
			m = sub[2]
		} else {
			m = strings.TrimPrefix(m, "yaml: ")
		}
		el.addf(line, 0, "%s", reword(m))
	}
}

func reword(m string) string {
	if sub := unknownKeyRE.FindStringSubmatch(m); sub != nil {
		where, known := describeType(sub[2])
		msg := fmt.Sprintf("unknown key %q in %s", sub[1], where)
		if known != "" {
			msg += " (known keys: " + known + ")"
		}
		return msg
	}
	if sub := cannotRE.FindStringSubmatch(m); sub != nil {
		got := map[string]string{"str": "a string", "int": "a number", "float": "a number", "bool": "a boolean",
			"null": "null", "map": "a mapping", "seq": "a list", "binary": "binary data", "timestamp": "a timestamp"}[sub[1]]
		if got == "" {
			got = "!!" + sub[1]
		}
		if sub[2] != "" {
			got += fmt.Sprintf(" (%s)", sub[2])
		}
		return fmt.Sprintf("want %s, got %s", describeGoType(sub[3]), got)
	}
	if sub := repeatedRE.FindStringSubmatch(m); sub != nil {
		return fmt.Sprintf("key %q repeated (first at line %s)", sub[1], sub[2])
	}
	return m
}

// formatTypes are the types of the format, by the name the decoder uses.
var formatTypes = map[string]struct {
	where string
	t     reflect.Type
}{
	"scenarios.Scenario":    {"the scenario", reflect.TypeFor[Scenario]()},
	"scenarios.Load":        {"load", reflect.TypeFor[Load]()},
	"scenarios.Stage":       {"a stage", reflect.TypeFor[Stage]()},
	"scenarios.Step":        {"a setup step", reflect.TypeFor[Step]()},
	"scenarios.Op":          {"an op", reflect.TypeFor[Op]()},
	"scenarios.Request":     {"request", reflect.TypeFor[Request]()},
	"scenarios.Capture":     {"capture", reflect.TypeFor[Capture]()},
	"scenarios.Expect":      {"expect", reflect.TypeFor[Expect]()},
	"scenarios.Environment": {"environment", reflect.TypeFor[Environment]()},
	"scenarios.Target":      {"target", reflect.TypeFor[Target]()},
	"scenarios.Build":       {"build", reflect.TypeFor[Build]()},
	"scenarios.Resources":   {"resources", reflect.TypeFor[Resources]()},
	"scenarios.Restart":     {"restart", reflect.TypeFor[Restart]()},
	"scenarios.Database":    {"database", reflect.TypeFor[Database]()},
	"scenarios.Probes":      {"probes", reflect.TypeFor[Probes]()},
	"scenarios.Compare":     {"compare", reflect.TypeFor[Compare]()},
	"scenarios.Heap":        {"heap", reflect.TypeFor[Heap]()},
	"scenarios.HeapMetric":  {"heap.metric", reflect.TypeFor[HeapMetric]()},
	"scenarios.GCHook":      {"heap.gc_hook", reflect.TypeFor[GCHook]()},
	"scenarios.Inspector":   {"heap.inspector", reflect.TypeFor[Inspector]()},
	"scenarios.Threshold":   {"a threshold", reflect.TypeFor[Threshold]()},
	"scenarios.TLS":         {"tls", reflect.TypeFor[TLS]()},
	"scenarios.WebSocket":   {"websocket", reflect.TypeFor[WebSocket]()},
	"scenarios.WSStep":      {"a websocket step", reflect.TypeFor[WSStep]()},
	"scenarios.WSSend":      {"send", reflect.TypeFor[WSSend]()},
	"scenarios.WSExpect":    {"a websocket expect", reflect.TypeFor[WSExpect]()},
	"scenarios.WSClose":     {"close", reflect.TypeFor[WSClose]()},
}

// describeType names a format type and lists its keys.
func describeType(goName string) (where, known string) {
	ft, ok := formatTypes[strings.TrimPrefix(goName, "*")]
	if !ok {
		return goName, ""
	}
	return ft.where, strings.Join(yamlKeys(ft.t), ", ")
}

func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
		case opts == "inline":
			keys = append(keys, yamlKeys(f.Type)...)
		case name != "":
			keys = append(keys, name)
		}
	}
	return keys
}

// describeGoType says in words what a Go type wants in YAML.
func describeGoType(t string) string {
	t = strings.TrimPrefix(t, "*")
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a mapping"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "a whole number"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "scenarios.Duration":
		return "a duration"
	}
	if ft, ok := formatTypes[t]; ok {
		return "a mapping (" + ft.where + ")"
	}
	return t
}

// locator finds the line of a value in the YAML tree by its path of mapping
// keys (string) and list indices (int), for error messages.
type locator struct{ root *yaml.Node }

// node returns the node at path, or nil.
func (l locator) node(path ...any) *yaml.Node {
	n := l.root
	for _, p := range path {
		if n = child(n, p); n == nil {
			return nil
		}
	}
	return n
}

// at returns the line and column of the value at path, or of its nearest
// ancestor that exists.
func (l locator) at(path ...any) (line, col int) {
	n := l.root
	if n == nil {
		return 0, 0
	}
	for _, p := range path {
		next := child(n, p)
		if next == nil {
			break
		}
		n = next
	}
	return n.Line, n.Column
}

func deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < MaxDepth; i++ {
		n = n.Alias
	}
	return n
}

func child(n *yaml.Node, p any) *yaml.Node {
	n = deref(n)
	if n == nil {
		return nil
	}
	switch p := p.(type) {
	case int:
		if n.Kind == yaml.SequenceNode && p >= 0 && p < len(n.Content) {
			return deref(n.Content[p])
		}
	case string:
		if kn := mapKey(n, p, 0); kn != nil {
			return deref(kn.valueOf)
		}
	}
	return nil
}

// keyed is a mapping key with its value.
type keyed struct {
	*yaml.Node
	valueOf *yaml.Node
}

// mapKey finds key k in mapping n, following merge keys ("<<").
func mapKey(n *yaml.Node, k string, depth int) *keyed {
	n = deref(n)
	if n == nil || n.Kind != yaml.MappingNode || depth > MaxDepth {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == k && n.Content[i].Kind == yaml.ScalarNode {
			return &keyed{n.Content[i], n.Content[i+1]}
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "<<" {
			continue
		}
		m := deref(n.Content[i+1])
		if m == nil {
			continue
		}
		if m.Kind == yaml.SequenceNode {
			for _, e := range m.Content {
				if kn := mapKey(e, k, depth+1); kn != nil {
					return kn
				}
			}
		} else if kn := mapKey(m, k, depth+1); kn != nil {
			return kn
		}
	}
	return nil
}
