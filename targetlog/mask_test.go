package targetlog

import (
	"slices"
	"testing"
)

func TestSecretsMasked(t *testing.T) {
	env := map[string]string{"API_TOKEN": "s3cr3t-token", "DB_PASSWORD": "hunter2", "SHORT": "on", "TOKEN_PART": "s3cr3t"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	scenario := `
target:
  env:
    TOKEN: ${env:API_TOKEN}
    PART: ${env:TOKEN_PART}
    FLAG: ${env:SHORT}
    MISSING: ${env:NOT_SET}
database: {password: "${env:DB_PASSWORD}"}
ops: [{name: get, request: {headers: {Authorization: "Bearer ${env:API_TOKEN}"}}}]
`
	secrets := Secrets(scenario, lookup)
	if want := []string{"s3cr3t-token", "hunter2", "s3cr3t"}; !slices.Equal(secrets, want) {
		t.Fatalf("Secrets = %q, want %q (longest first, unset and short ones left out, no repeats)", secrets, want)
	}
	m := NewMasker(secrets)
	tests := []struct{ in, want string }{
		{"connecting with password hunter2", "connecting with password ***"},
		{"auth: Bearer s3cr3t-token ok", "auth: Bearer *** ok"},
		{"partial s3cr3t here", "partial *** here"},
		{"listening on :8080 (debug on)", "listening on :8080 (debug on)"},
	}
	for _, tt := range tests {
		if got := m.String(tt.in); got != tt.want {
			t.Errorf("mask %q = %q, want %q", tt.in, got, tt.want)
		}
	}
	lines := []string{"a hunter2", "b"}
	if got := m.Lines(lines); got[0] != "a ***" || got[1] != "b" {
		t.Errorf("Lines = %q", got)
	}
	if got := (Masker{}).String("hunter2"); got != "hunter2" {
		t.Errorf("zero Masker changed %q", got)
	}
}
