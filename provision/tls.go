package provision

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// templateTLS is {{.TLS.CertFile}} and {{.TLS.KeyFile}}: where the target
// finds its certificate and key (paths as the target sees them).
type templateTLS struct {
	CertFile string
	KeyFile  string
}

// makeSelfSigned writes a fresh self-signed certificate for 127.0.0.1, ::1
// and localhost (ECDSA P-256, valid a year: soaks last days, not years)
// and its key into hostDir (scenarios.ProvisionedCertFile and its key), and returns the template paths under
// targetDir, the same directory as the target sees it. The key is
// readable by every user: the target may run as any user, the key is made
// for this environment alone and removed with it.
func makeSelfSigned(hostDir, targetDir string) (*templateTLS, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("tls: generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("tls: serial: %w", err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "longhaul target", Organization: []string{"longhaul"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("tls: create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("tls: encode key: %w", err)
	}
	dir := filepath.Join(hostDir, scenarios.ProvisionedTLSDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("tls: %w", err)
	}
	files := []struct {
		name, typ string
		der       []byte
	}{{scenarios.ProvisionedCertName, "CERTIFICATE", der}, {scenarios.ProvisionedKeyName, "PRIVATE KEY", keyDER}}
	for _, f := range files {
		b := pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der})
		if err := os.WriteFile(filepath.Join(dir, f.name), b, 0o644); err != nil {
			return nil, fmt.Errorf("tls: %w", err)
		}
	}
	// The target may see the directory elsewhere (a container's mount).
	tdir := strings.TrimRight(targetDir, "/") + "/" + scenarios.ProvisionedTLSDir + "/"
	return &templateTLS{CertFile: tdir + scenarios.ProvisionedCertName, KeyFile: tdir + scenarios.ProvisionedKeyName}, nil
}
