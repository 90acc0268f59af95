package scenarios_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// withoutLines returns steps with their source lines zeroed, so the same
// steps at different places in two files compare equal.
func withoutLines(setup []scenarios.Step, ops []scenarios.Op) ([]scenarios.Step, []scenarios.Op) {
	s := append([]scenarios.Step(nil), setup...)
	o := append([]scenarios.Op(nil), ops...)
	for i := range s {
		s[i].Line = 0
	}
	for i := range o {
		o[i].Line = 0
	}
	return s, o
}

// loadMixCopy loads the scenario file, which holds a copy of
// parse-mix.yaml's setup and ops (a scenario cannot include another), and
// reports where that copy differs from parse-mix.yaml.
func loadMixCopy(t *testing.T, file string) *scenarios.Scenario {
	t.Helper()
	demo, err := scenarios.LoadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	mix, err := scenarios.LoadFile("parse-mix.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gotSetup, gotOps := withoutLines(demo.Setup, demo.Ops)
	wantSetup, wantOps := withoutLines(mix.Setup, mix.Ops)
	if !reflect.DeepEqual(gotSetup, wantSetup) {
		t.Errorf("%s setup differs from parse-mix.yaml's:\n got %+v\nwant %+v", file, gotSetup, wantSetup)
	}
	if !reflect.DeepEqual(gotOps, wantOps) {
		t.Errorf("%s ops differ from parse-mix.yaml's:\n got %+v\nwant %+v", file, gotOps, wantOps)
	}
	return demo
}

// TestDemoScenario: demo.yaml validates, describes the demo target for both
// providers, and drives exactly parse-mix.yaml's setup and ops (it holds a
// copy, since a scenario cannot include another).
func TestDemoScenario(t *testing.T) {
	for _, tt := range []struct{ file, kind string }{{"demo.yaml", "postgres"}, {"demo-mysql.yaml", "mysql"}, {"demo-mongodb.yaml", "mongodb"}} {
		t.Run(tt.file, func(t *testing.T) { testDemoScenario(t, tt.file, tt.kind) })
	}
}

func testDemoScenario(t *testing.T, file, kind string) {
	demo := loadMixCopy(t, file)

	env := demo.Environment
	if env.Target.Build == nil {
		t.Fatalf("%s has no target.build for the local provider", file)
	}
	abs, _ := filepath.Abs(filepath.Join("..", "examples", "demo-target"))
	checks := []struct {
		what      string
		got, want any
	}{
		{"provider", env.Provider, "auto"},
		{"image", env.Target.Image, "longhaul/demo-target:latest"},
		{"build.dir (resolved against the file)", env.Target.Build.Dir, abs},
		{"command", env.Target.Command, []string{"{{.EnvDir}}/demo-target"}},
		{"DATABASE_URL", env.Target.Env["DATABASE_URL"], "{{.Database.URL}}"},
		{"health", env.Target.Health, "/health"},
		{"database.kind", env.Database.Kind, kind},
		{"database.image (provider default)", env.Database.Image, ""},
		{"vus", demo.Load.VUs, 16},
		{"window", demo.Load.Window.D().String(), "10s"},
		{"heap metric", demo.Probes.Heap != nil && demo.Probes.Heap.Metric != nil, true},
		{"gc hook", demo.Probes.Heap != nil && demo.Probes.Heap.GCHook != nil, true},
		{"database probe", func() bool { on, set := demo.Probes.PostgresOn(); return on && set }(), true},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
	if _, err := scenarios.Compile(demo, scenarios.CompileOptions{}); err != nil {
		t.Errorf("Compile(%s): %v", file, err)
	}
}

// TestDemoHTTPSScenario: demo-https.yaml drives parse-mix.yaml's mix over
// TLS, with the provisioned certificate handed to the demo target.
func TestDemoHTTPSScenario(t *testing.T) {
	demo := loadMixCopy(t, "demo-https.yaml")
	env := demo.Environment
	checks := []struct {
		what      string
		got, want any
	}{
		{"https", env.HTTPS(), true},
		{"protocol", env.Protocol, "h1"},
		{"DEMO_TLS_CERT", env.Target.Env["DEMO_TLS_CERT"], "{{.TLS.CertFile}}"},
		{"DEMO_TLS_KEY", env.Target.Env["DEMO_TLS_KEY"], "{{.TLS.KeyFile}}"},
		{"driver CA", env.DriverTLS("/env").CAFile, filepath.Join("/env", "tls", "cert.pem")},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

// TestDemoWebSocketScenario: demo-websocket.yaml holds pinged sessions and
// runs scripted exchanges against the demo target's endpoints.
func TestDemoWebSocketScenario(t *testing.T) {
	demo, err := scenarios.LoadFile("demo-websocket.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := scenarios.Compile(demo, scenarios.CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*scenarios.WSPlan{}
	for _, a := range p.Ops {
		byName[a.Name] = a.WebSocket
	}
	hold, chat := byName["hold"], byName["chat"]
	if hold == nil || hold.Ping.String() != "1s" || hold.Hold <= 0 {
		t.Errorf("hold op: %+v, want a held session pinged every 1s", hold)
	}
	if chat == nil || len(chat.Steps) != 6 || chat.Steps[5].Kind != scenarios.WSCloseStep {
		t.Errorf("chat op: %+v, want a 6-step script ending in close", chat)
	}
}
