package scenarios

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// validateProtocol checks environment.protocol against environment.tls and
// the target URL's scheme: h2 is negotiated by ALPN, so it needs TLS; h2c is
// cleartext, so it excludes it.
func (v *validator) validateProtocol() {
	e := &v.s.Environment
	ep := func(k ...any) []any { return join(p("environment"), k...) }
	if err := e.CheckProtocol(e.Protocol); err != nil {
		v.errf(ep("protocol"), "%v", err)
	}
	if t := e.TLS; t != nil && t.InsecureSkipVerify && t.CAFile != "" {
		v.errf(ep("tls"), "tls: ca_file and insecure_skip_verify exclude each other; keep one")
	}
	if u := e.Target.URL; u != "" && e.TLS != nil && !strings.HasPrefix(strings.ToLower(u), "https:") {
		v.errf(ep("tls"), "tls is set but target.url %q is not https://", u)
	}
}

// CheckProtocol reports whether the driver can speak proto ("" is h1) to
// this environment's target: h2 is negotiated by ALPN, so it needs TLS;
// h2c is cleartext, so it excludes it.
func (e Environment) CheckProtocol(proto string) error {
	switch proto {
	case "", ProtocolH1:
	case ProtocolH2:
		if !e.HTTPS() {
			return errors.New("protocol h2 is HTTP/2 over TLS: add environment.tls (or use h2c for cleartext HTTP/2)")
		}
	case ProtocolH2C:
		if e.HTTPS() {
			return errors.New("protocol h2c is cleartext HTTP/2; with tls use h2")
		}
	default:
		return fmt.Errorf("protocol %q is not one of h1, h2, h2c", proto)
	}
	return nil
}

// HTTPS reports whether the driver talks TLS to the target: environment.tls
// is set or target.url is an https URL.
func (e Environment) HTTPS() bool {
	if e.TLS != nil {
		return true
	}
	if e.Target.URL == "" {
		return false
	}
	u, err := url.Parse(e.Target.URL)
	return err == nil && u.Scheme == "https"
}

// The certificate of a provisioned https target: the provider writes it
// (self-signed, with its key) into the environment's own directory at
// provision time, the driver trusts it.
const (
	ProvisionedTLSDir   = "tls"
	ProvisionedCertName = "cert.pem"
	ProvisionedKeyName  = "key.pem"
)

// ProvisionedCertFile is the provisioned certificate's path under envDir.
func ProvisionedCertFile(envDir string) string {
	return filepath.Join(envDir, ProvisionedTLSDir, ProvisionedCertName)
}

// DriverTLS returns the TLS settings the driver uses: environment.tls with,
// for a provisioned target (no target.url) whose environment directory on
// this host is envDir, the provisioned certificate as the CA unless
// ca_file or insecure_skip_verify says otherwise. Nil without tls.
func (e Environment) DriverTLS(envDir string) *TLS {
	if e.TLS == nil {
		return nil
	}
	t := *e.TLS
	if t.CAFile == "" && !t.InsecureSkipVerify && e.Target.URL == "" && envDir != "" {
		t.CAFile = ProvisionedCertFile(envDir)
	}
	return &t
}
