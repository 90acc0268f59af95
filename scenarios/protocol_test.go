package scenarios_test

import (
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/scenarios"
)

func TestProtocolValidation(t *testing.T) {
	const ops = "ops:\n  - name: get\n    request: {path: /}\n"
	tests := []struct {
		name, env, want string
	}{
		{"h1 default", "target: {url: \"http://127.0.0.1:8080\"}", ""},
		{"h2 over tls url", "protocol: h2\n  target: {url: \"https://127.0.0.1:8443\"}", ""},
		{"h2 provisioned tls", "provider: local\n  tls: {}\n  protocol: h2\n  target: {command: [x]}", ""},
		{"h2c cleartext", "protocol: h2c\n  target: {url: \"http://127.0.0.1:8080\"}", ""},
		{"h2 without tls", "protocol: h2\n  target: {url: \"http://127.0.0.1:8080\"}", "HTTP/2 over TLS"},
		{"h2c with tls", "protocol: h2c\n  target: {url: \"https://127.0.0.1:8443\"}", "cleartext"},
		{"unknown", "protocol: h3\n  target: {url: \"http://127.0.0.1:8080\"}", "not one of h1, h2, h2c"},
		{"tls on http url", "tls: {insecure_skip_verify: true}\n  target: {url: \"http://127.0.0.1:8080\"}", "not https"},
		{"ca and insecure", "tls: {ca_file: ca.pem, insecure_skip_verify: true}\n  target: {url: \"https://127.0.0.1:8443\"}", "exclude"},
		{"unknown tls key", "tls: {verify: false}\n  target: {url: \"https://127.0.0.1:8443\"}", "unknown key \"verify\" in tls"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: x\nenvironment:\n  " + tt.env + "\n" + ops
			_, err := scenarios.Parse([]byte(src), "x.yaml")
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestDriverTLS(t *testing.T) {
	provisioned := scenarios.Environment{TLS: &scenarios.TLS{}}
	if got := provisioned.DriverTLS("/e").CAFile; got != "/e/tls/cert.pem" {
		t.Errorf("provisioned CA = %q", got)
	}
	own := scenarios.Environment{TLS: &scenarios.TLS{CAFile: "/my/ca.pem"}}
	if got := own.DriverTLS("/e").CAFile; got != "/my/ca.pem" {
		t.Errorf("ca_file = %q, want the scenario's", got)
	}
	url := scenarios.Environment{Target: scenarios.Target{URL: "https://127.0.0.1:1"}, TLS: &scenarios.TLS{}}
	if got := url.DriverTLS("/e").CAFile; got != "" {
		t.Errorf("target.url CA = %q, want none (the system's roots)", got)
	}
	if (scenarios.Environment{}).DriverTLS("/e") != nil {
		t.Error("no tls: want nil")
	}
}
