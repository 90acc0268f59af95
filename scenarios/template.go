package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Template syntax (see README.md):
//
//	{{ .name }}                 a VU variable (captured)
//	{{ vu }}                    the VU number, from 1
//	{{ seq }}                   a counter shared by all VUs, from 1
//	{{ uuid }}                  a random version-4 UUID
//	{{ randInt MIN MAX }}       a random integer in [MIN, MAX]
//	{{ randString MIN MAX }}    a random alphanumeric string, length in [MIN, MAX]
//	{{ pick "pool" }}           a random entry of a pool (kept)
//	{{ take "pool" }}           a random entry of a pool (removed)
//	{{ "text" }}                the text itself (a way to write a literal "{{")
//	${env:NAME}                 the environment variable NAME, resolved by Compile

// partKind is what one part of a parsed template produces.
type partKind uint8

const (
	partLit partKind = iota
	partVar
	partVU
	partSeq
	partUUID
	partRandInt
	partRandString
	partPick
	partTake
	partEnv
)

// numeric reports whether the part always renders a JSON number.
func (k partKind) numeric() bool { return k == partVU || k == partSeq || k == partRandInt }

// part is one piece of a parsed template.
type part struct {
	kind partKind
	text string // literal text, variable, pool or environment variable name
	a, b int64  // function arguments
}

// Limits on template function arguments.
const (
	maxRandStringLen = 1 << 16
)

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// templateFuncs are the template functions with their argument counts.
var templateFuncs = map[string]int{"vu": 0, "seq": 0, "uuid": 0, "randInt": 2, "randString": 2, "pick": 1, "take": 1}

const knownFuncs = "vu, seq, uuid, randInt, randString, pick, take"

// parseTemplate parses src into parts. Adjacent literal text is merged.
// Parsing is linear in len(src), so a 1 MiB template costs milliseconds.
func parseTemplate(src string) ([]part, error) {
	const envOpen = "${env:"
	var parts []part
	var lit strings.Builder // literal text not yet added to parts
	flush := func() {
		if lit.Len() > 0 {
			parts = append(parts, part{kind: partLit, text: lit.String()})
			lit.Reset()
		}
	}
	// next returns the position of sub at or after pos, reusing cached (a
	// position found earlier, -1 for none, -2 for not searched yet) while it
	// is still ahead: each byte of src is searched once.
	next := func(cached, pos int, sub string) int {
		if cached == -1 || cached >= pos {
			return cached
		}
		if k := strings.Index(src[pos:], sub); k >= 0 {
			return pos + k
		}
		return -1
	}
	action, env := -2, -2
	for pos := 0; pos < len(src); {
		action, env = next(action, pos, "{{"), next(env, pos, envOpen)
		switch {
		case action < 0 && env < 0:
			lit.WriteString(src[pos:])
			pos = len(src)
		case env >= 0 && (action < 0 || env < action):
			lit.WriteString(src[pos:env])
			rest := src[env+len(envOpen):]
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("unclosed ${env: (write ${env:NAME})")
			}
			name := rest[:end]
			if !identRE.MatchString(name) {
				return nil, fmt.Errorf("${env:%s}: %q is not an environment variable name", name, name)
			}
			flush()
			parts = append(parts, part{kind: partEnv, text: name})
			pos = len(src) - len(rest) + end + 1
		default:
			lit.WriteString(src[pos:action])
			p, rest, err := parseAction(src[action+2:])
			if err != nil {
				return nil, err
			}
			if p.kind == partLit {
				lit.WriteString(p.text)
			} else {
				flush()
				parts = append(parts, p)
			}
			pos = len(src) - len(rest)
		}
	}
	flush()
	return parts, nil
}

// parseAction parses the inside of {{ ... }} at the start of s and returns
// the part and what follows the closing }}.
func parseAction(s string) (part, string, error) {
	var args []string
	var quoted []bool
	i := 0
	for {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
		if i >= len(s) {
			return part{}, "", fmt.Errorf("unclosed {{ (every {{ needs a }})")
		}
		if strings.HasPrefix(s[i:], "}}") {
			i += 2
			break
		}
		if s[i] == '"' {
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return part{}, "", fmt.Errorf("unclosed string in {{ ... }}")
			}
			v, err := strconv.Unquote(s[i : j+1])
			if err != nil {
				return part{}, "", fmt.Errorf("bad string %s in {{ ... }}", s[i:j+1])
			}
			args = append(args, v)
			quoted = append(quoted, true)
			i = j + 1
			continue
		}
		j := i
		for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '"' && !strings.HasPrefix(s[j:], "}}") {
			j++
		}
		args = append(args, s[i:j])
		quoted = append(quoted, false)
		i = j
	}
	rest := s[i:]
	if len(args) == 0 {
		return part{}, "", fmt.Errorf("empty {{ }}")
	}
	name := args[0]
	switch {
	case quoted[0]:
		if len(args) != 1 {
			return part{}, "", fmt.Errorf("{{ %q ... }}: a string action takes nothing after the string", name)
		}
		return part{kind: partLit, text: name}, rest, nil
	case strings.HasPrefix(name, "."):
		if !identRE.MatchString(name[1:]) {
			return part{}, "", fmt.Errorf("{{ %s }}: %q is not a variable name", name, name[1:])
		}
		if len(args) != 1 {
			return part{}, "", fmt.Errorf("{{ %s }}: a variable takes no arguments", name)
		}
		return part{kind: partVar, text: name[1:]}, rest, nil
	}
	want, ok := templateFuncs[name]
	if !ok {
		return part{}, "", fmt.Errorf("unknown template function %q (known: %s; variables are written {{ .name }})", name, knownFuncs)
	}
	if got := len(args) - 1; got != want {
		return part{}, "", fmt.Errorf("%s takes %d argument%s, got %d", name, want, plural(want), got)
	}
	switch name {
	case "vu":
		return part{kind: partVU}, rest, nil
	case "seq":
		return part{kind: partSeq}, rest, nil
	case "uuid":
		return part{kind: partUUID}, rest, nil
	case "pick", "take":
		if !quoted[1] || args[1] == "" {
			return part{}, "", fmt.Errorf("%s takes a pool name in quotes: {{ %s \"items\" }}", name, name)
		}
		k := partPick
		if name == "take" {
			k = partTake
		}
		return part{kind: k, text: args[1]}, rest, nil
	}
	// randInt, randString
	var nums [2]int64
	for k := range 2 {
		n, err := strconv.ParseInt(args[k+1], 10, 64)
		if err != nil || quoted[k+1] {
			return part{}, "", fmt.Errorf("%s takes two integers, got %q", name, args[k+1])
		}
		nums[k] = n
	}
	if nums[0] > nums[1] {
		return part{}, "", fmt.Errorf("%s %d %d: MIN is greater than MAX", name, nums[0], nums[1])
	}
	if name == "randString" {
		if nums[0] < 0 || nums[1] > maxRandStringLen {
			return part{}, "", fmt.Errorf("randString %d %d: lengths must be within 0..%d", nums[0], nums[1], maxRandStringLen)
		}
		return part{kind: partRandString, a: nums[0], b: nums[1]}, rest, nil
	}
	return part{kind: partRandInt, a: nums[0], b: nums[1]}, rest, nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
