// Package targetlog keeps what a target and its database print during a soak
// and makes it safe to show: the values of secrets the scenario resolved from
// ${env:NAME} are masked before any line is stored or printed.
//
// Recipe:
//
//  1. Secrets(scenarioText, lookup) lists the secret values a run used.
//  2. NewMasker(secrets).Lines(lines) (or .String) replaces each with "***".
package targetlog

import (
	"regexp"
	"slices"
	"strings"
)

// envRef matches a ${env:NAME} reference, the only way a scenario names a secret.
var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// minSecretLen: shorter values are not masked. A value of one or two
// characters ("1", "on") would turn every line into asterisks and hides
// nothing worth hiding.
const minSecretLen = 3

// Secrets returns the values of the ${env:NAME} references in text (a
// scenario's YAML), resolved with lookup, longest first so that a secret
// containing another is masked whole. Unset or very short values are left out.
func Secrets(text string, lookup func(string) (string, bool)) []string {
	var out []string
	for _, m := range envRef.FindAllStringSubmatch(text, -1) {
		v, ok := lookup(m[1])
		if !ok || len(v) < minSecretLen || slices.Contains(out, v) {
			continue
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// Masker replaces secret values with "***". The zero value and a Masker of
// no secrets leave text as it is.
type Masker struct{ r *strings.Replacer }

// NewMasker returns a Masker of secrets (as from Secrets).
func NewMasker(secrets []string) Masker {
	if len(secrets) == 0 {
		return Masker{}
	}
	pairs := make([]string, 0, 2*len(secrets))
	for _, s := range secrets {
		pairs = append(pairs, s, "***")
	}
	return Masker{strings.NewReplacer(pairs...)}
}

// String returns s with every secret masked.
func (m Masker) String(s string) string {
	if m.r == nil {
		return s
	}
	return m.r.Replace(s)
}

// Lines masks every line in place and returns lines.
func (m Masker) Lines(lines []string) []string {
	for i, l := range lines {
		lines[i] = m.String(l)
	}
	return lines
}
