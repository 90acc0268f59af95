package provision_test

import (
	"context"
	"log/slog"
	"maps"
	"net/url"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/driver"
	"github.com/longhaul-dev/longhaul/provision"
	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/longhaul-dev/longhaul/window"
)

// TestDemoHTTPSLocal is the end-to-end test of scenarios/demo-https.yaml on
// the local provider: the demo target is built, gets a certificate made at
// provision time, and is driven over HTTP/1.1 with TLS, over HTTP/2 (ALPN)
// and — the same scenario without tls — over cleartext HTTP/1.1 and h2c.
// An open-model rate the target easily keeps up with makes every protocol
// send the same number of requests, all of them answered as expected.
func TestDemoHTTPSLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo target")
	}
	s, err := scenarios.LoadFile(filepath.Join("..", "scenarios", "demo-https.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bin, l := demoTargetLocal(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	const rate, seconds = 100, 2
	load := scenarios.Load{Rate: rate, MaxVUs: 8, Window: scenarios.Duration(time.Second),
		Duration: scenarios.Duration(seconds * time.Second), Timeout: scenarios.Duration(5 * time.Second)}
	tests := []struct {
		name, proto string
		tls         bool
		wantScheme  string
	}{
		{"https h1", scenarios.ProtocolH1, true, "https"},
		{"https h2", scenarios.ProtocolH2, true, "https"},
		{"http h1", scenarios.ProtocolH1, false, "http"},
		{"http h2c", scenarios.ProtocolH2C, false, "http"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := s.Environment
			spec.Provider = "local"
			spec.Protocol = tt.proto
			spec.Target.Build, spec.Target.Command = nil, []string{bin}
			spec.Target.Env = maps.Clone(spec.Target.Env)
			if !tt.tls {
				spec.TLS = nil
				delete(spec.Target.Env, "DEMO_TLS_CERT")
				delete(spec.Target.Env, "DEMO_TLS_KEY")
			}
			env, err := l.Provision(ctx, provision.Request{RunID: "protocols-e2e", Incarnation: i, Spec: spec})
			defer func() {
				if err := l.Teardown(context.WithoutCancel(ctx), env); err != nil {
					t.Errorf("teardown: %v", err)
				}
			}()
			if err != nil {
				t.Fatalf("provision: %v", err)
			}
			u, err := url.Parse(env.TargetURL)
			if err != nil || u.Scheme != tt.wantScheme {
				t.Fatalf("target URL %q, want scheme %s", env.TargetURL, tt.wantScheme)
			}
			plan, err := scenarios.Compile(s, scenarios.CompileOptions{Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			var ws []window.Window
			_, err = driver.Run(ctx, driver.Options{Target: u, Plan: plan, Load: load, Seed: 7,
				Protocol: spec.Protocol, TLS: spec.DriverTLS(env.EnvDir)}, func(w window.Window) error {
				ws = append(ws, w)
				return nil
			})
			if err != nil {
				t.Fatalf("drive: %v", err)
			}
			var requests, ok, dropped, handshakes int64
			for _, w := range ws {
				requests += w.Requests
				ok += w.OK
				dropped += w.Dropped
				if w.TLS != nil {
					handshakes += w.TLS.Handshakes
					if !tt.tls {
						t.Errorf("window %d of a cleartext run has a tls part", w.Index)
					}
				} else if tt.tls {
					t.Errorf("window %d of an https run has no tls part", w.Index)
				}
			}
			// Setup (sign-up and login per VU) comes on top of the rate's
			// iterations. Every scheduled iteration is sent or, when all VUs
			// are busy (bcrypt sign-ups on a loaded machine), dropped: the
			// two add up to the schedule on every protocol, and every
			// request sent is answered as expected.
			setup := int64(2 * load.MaxVUs)
			t.Logf("%s: %d requests (%d setup), %d ok, %d dropped, %d handshakes", tt.name, requests, setup, ok, dropped, handshakes)
			// (±5 %: starts due as the run stops are neither.)
			if iters := requests - setup; iters+dropped < rate*seconds*95/100 || iters+dropped > rate*seconds+2 || iters <= 0 || ok != requests {
				t.Errorf("%d requests (%d after %d setup), %d ok, %d dropped: want %d iterations sent or dropped, all sent ok",
					requests, iters, setup, ok, dropped, rate*seconds)
			}
			if tt.tls && handshakes < 1 {
				t.Errorf("no TLS handshake recorded")
			}
			if tt.tls && !strings.HasPrefix(spec.DriverTLS(env.EnvDir).CAFile, env.EnvDir) {
				t.Errorf("the driver does not trust the provisioned certificate")
			}
		})
	}
}

// demoTargetLocal builds the demo target once for a test (with the test's
// own build settings, whose cache is warm, rather than a scenario's static
// build) and returns it with a local provider writing under a temporary
// directory.
func demoTargetLocal(t *testing.T) (string, *provision.Local) {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "demo-target")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("..", "examples", "demo-target")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the demo target: %v\n%s", err, out)
	}
	return bin, provision.NewLocal(provision.Options{DataDir: t.TempDir(), StopGrace: 2 * time.Second, Logger: slog.New(slog.DiscardHandler)})
}
