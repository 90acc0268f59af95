package scenarios

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"
)

// typeErrorf reports a problem found while decoding node n in the form the
// YAML decoder uses, so that it is collected with the decoder's own errors
// instead of stopping the decoding.
func typeErrorf(n *yaml.Node, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: ", n.Line) + fmt.Sprintf(format, args...)}}
}

// parseDuration parses a Go duration ("30s", "1h30m"); a bare 0 is allowed.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err == nil {
		return d, nil
	}
	if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
		return 0, fmt.Errorf("duration %s needs a unit, e.g. %ss or %sms", s, s, s)
	}
	return 0, fmt.Errorf("%q is not a duration (write e.g. 30s, 500ms, 1h30m)", s)
}

// UnmarshalYAML reads a duration string such as "30s" or "1h30m".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return typeErrorf(n, "want a duration (e.g. 30s), got a %s", kindName(n))
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return typeErrorf(n, "%v", err)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes d as a Go duration string ("1m30s").
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a Go duration string.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := parseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// String returns d as a Go duration string.
func (d Duration) String() string { return time.Duration(d).String() }

// UnmarshalYAML reads either one duration (a fixed pause) or {min, max}.
func (t *Think) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		var d Duration
		if err := d.UnmarshalYAML(n); err != nil {
			return err
		}
		*t = Think{Min: d, Max: d}
		return nil
	case yaml.MappingNode:
		var errs []string
		var out Think
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			var dst *Duration
			switch k.Value {
			case "min":
				dst = &out.Min
			case "max":
				dst = &out.Max
			default:
				errs = append(errs, fmt.Sprintf("line %d: unknown key %q in think (known keys: min, max)", k.Line, k.Value))
				continue
			}
			if err := dst.UnmarshalYAML(v); err != nil {
				errs = append(errs, err.(*yaml.TypeError).Errors...)
			}
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		if out.Max == 0 && out.Min > 0 {
			out.Max = out.Min
		}
		*t = out
		return nil
	default:
		return typeErrorf(n, "think is a duration (100ms) or {min: 50ms, max: 150ms}, got a %s", kindName(n))
	}
}

// UnmarshalYAML reads `true`, `false` or `{sqlite: PATH}`.
func (d *DatabaseProbe) UnmarshalYAML(n *yaml.Node) error {
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return typeErrorf(n, "%v", err)
		}
		*d = DatabaseProbe{Postgres: &b}
		return nil
	case n.Kind == yaml.MappingNode:
		var errs []string
		var out DatabaseProbe
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Value != "sqlite" {
				errs = append(errs, fmt.Sprintf("line %d: unknown key %q in probes.database (known keys: sqlite; or write database: true for PostgreSQL)", k.Line, k.Value))
				continue
			}
			if v.Kind != yaml.ScalarNode || v.ShortTag() != "!!str" {
				errs = append(errs, fmt.Sprintf("line %d: probes.database.sqlite is the path of the target's SQLite file, got a %s", v.Line, kindName(v)))
				continue
			}
			out.SQLite = v.Value
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		*d = out
		return nil
	}
	return typeErrorf(n, "probes.database is true, false (PostgreSQL statistics) or {sqlite: PATH}, got a %s", kindName(n))
}

// MarshalJSON writes the boolean form as a boolean (as it was before the
// SQLite form existed, so stored scenarios and workflow payloads keep their
// shape) and the SQLite form as {"sqlite": PATH}.
func (d DatabaseProbe) MarshalJSON() ([]byte, error) {
	if d.SQLite == "" && d.Postgres != nil {
		return json.Marshal(*d.Postgres)
	}
	return json.Marshal(struct {
		SQLite string `json:"sqlite"`
	}{d.SQLite})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *DatabaseProbe) UnmarshalJSON(b []byte) error {
	var on bool
	if err := json.Unmarshal(b, &on); err == nil {
		*d = DatabaseProbe{Postgres: &on}
		return nil
	}
	var v struct {
		SQLite string `json:"sqlite"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("probes.database: want true, false or {\"sqlite\": PATH}: %w", err)
	}
	*d = DatabaseProbe{SQLite: v.SQLite}
	return nil
}

// kindName names a node's kind for error messages.
func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.AliasNode:
		return "alias"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return "number"
		case "!!float":
			return "number"
		case "!!bool":
			return "boolean"
		case "!!null":
			return "null"
		}
		return "string"
	}
	return "document"
}
