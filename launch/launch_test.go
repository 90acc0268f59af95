package launch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// scenarioFile writes a scenario that the local provider can run.
func scenarioFile(t *testing.T, extra string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "soak.yaml")
	body := `name: demo
environment:
  provider: local
  target:
    command: ["./api"]
    build: {command: "go build -o api ."}
load:
  duration: 1m
  window: 10s
  warmup: 10s
ops:
  - name: get
    weight: 1
    request: {method: GET, path: /items}
` + extra
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func changed(flags ...string) func(string) bool {
	return func(f string) bool {
		for _, g := range flags {
			if f == g {
				return true
			}
		}
		return false
	}
}

func noEnv(string) (string, bool) { return "", false }

func soakRequest(file string) SoakRequest {
	return SoakRequest{File: file, HostWait: time.Minute, Format: "text", Changed: changed(), LookupEnv: noEnv}
}

func TestPlanSoak(t *testing.T) {
	file := scenarioFile(t, "")
	p, err := PlanSoak(context.Background(), soakRequest(file))
	if err != nil {
		t.Fatal(err)
	}
	if p.Scenario.Name != "demo" || p.Duration != time.Minute || p.Window != 10*time.Second || p.Dir != filepath.Dir(file) || len(p.Source) == 0 || p.TargetEnv == nil {
		t.Errorf("plan %+v", p)
	}
	r := soakRequest(file)
	r.Duration, r.Window, r.Changed = 5*time.Second, time.Second, changed("duration", "window")
	r.TargetEnv, r.FailOn = []string{"A=1", "B=x=y"}, "warning"
	if p, err = PlanSoak(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if p.Duration != 5*time.Second || p.Window != time.Second || p.TargetEnv["B"] != "x=y" || p.FailOn != "warning" {
		t.Errorf("with flags: %+v", p)
	}
	// A scenario window longer than a --duration shrinks to it.
	r = soakRequest(file)
	r.Duration, r.Changed = 5*time.Second, changed("duration")
	if p, err = PlanSoak(context.Background(), r); err != nil || p.Window != 5*time.Second {
		t.Errorf("window %s, err %v; want the window cut to the 5s run", p.Window, err)
	}
}

// Every bad value is one line naming the flag and what it takes.
func TestPlanSoakBadInput(t *testing.T) {
	file := scenarioFile(t, "")
	tests := []struct {
		name string
		edit func(*SoakRequest)
		want string
	}{
		{"format", func(r *SoakRequest) { r.Format = "xml" }, "--format"},
		{"push url", func(r *SoakRequest) { r.PushURL = "ftp://x" }, "--push-url"},
		{"host wait", func(r *SoakRequest) { r.HostWait = 0 }, "--host-wait must be at least 1s"},
		{"fail-on", func(r *SoakRequest) { r.FailOn = "info" }, "--fail-on"},
		{"provider", func(r *SoakRequest) { r.Provider = "k8s" }, "use local, docker, auto or url"},
		{"provider without target", func(r *SoakRequest) { r.Provider = "docker" }, "no target.image or target.build.repo"},
		{"duration", func(r *SoakRequest) { r.Duration, r.Changed = 0, changed("duration") }, "--duration must be > 0"},
		{"window", func(r *SoakRequest) { r.Window, r.Changed = 2*time.Minute, changed("window") }, "--window 2m0s is longer than the run"},
		{"protocol", func(r *SoakRequest) { r.Protocol = "h3" }, "--protocol h3"},
		{"target env", func(r *SoakRequest) { r.TargetEnv = []string{"=x"} }, `--target-env "=x": want KEY=VALUE`},
		{"missing file", func(r *SoakRequest) { r.File += ".none" }, "soak.yaml.none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := soakRequest(file)
			tt.edit(&r)
			_, err := PlanSoak(context.Background(), r)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err %v, want one line containing %q", err, tt.want)
			}
		})
	}
}

// ${env:NAME} must resolve when this process is the worker; a remote
// worker resolves it itself.
func TestPlanSoakEnvReferences(t *testing.T) {
	file := scenarioFile(t, "  - {name: login, weight: 1, request: {method: POST, path: /login, json: {token: \"${env:API_TOKEN}\"}}}\n")
	_, err := PlanSoak(context.Background(), soakRequest(file))
	var errs scenarios.Errors
	if !errors.As(err, &errs) || !strings.Contains(err.Error(), "API_TOKEN") {
		t.Fatalf("err %v, want a scenario error naming API_TOKEN", err)
	}
	r := soakRequest(file)
	r.Remote = true
	if _, err := PlanSoak(context.Background(), r); err != nil {
		t.Errorf("remote: %v", err)
	}
}

// A target.url that does not answer is refused before anything is recorded.
func TestPlanSoakUnreachableTarget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "url.yaml")
	body := "name: u\nenvironment:\n  target:\n    url: http://127.0.0.1:1\nload: {duration: 10s}\nops:\n  - {name: get, weight: 1, request: {method: GET, path: /}}\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := PlanSoak(context.Background(), soakRequest(path))
	if err == nil || !strings.Contains(err.Error(), "is the target running?") {
		t.Errorf("err %v, want the target named unreachable", err)
	}
}

func compareRequest(file string) CompareRequest {
	return CompareRequest{File: file, Pairs: "auto", MaxPairs: 10, DecideOn: "cpu,p50,p99,throughput", Order: "abba",
		Equivalence: "200", DisturbedAbove: "0.25", Format: "text", Seed: 7, Changed: changed(), LookupEnv: noEnv}
}

func TestPlanCompare(t *testing.T) {
	file := scenarioFile(t, "")
	r := compareRequest(file)
	r.BEnv, r.RoundDuration, r.Changed = []string{"DEMO_CPU_BURN_US=20"}, 30*time.Second, changed("round-duration", "seed")
	p, err := PlanCompare(r)
	if err != nil {
		t.Fatal(err)
	}
	rec, in := p.Record, p.Input
	if rec.Name != "demo" || rec.Provider != "local" || rec.RoundDuration != 30*time.Second || rec.Window != 10*time.Second || rec.Warmup != 10*time.Second ||
		rec.Pairs != 0 || rec.MaxPairs != 10 || rec.Seed != 7 || rec.B.Env["DEMO_CPU_BURN_US"] != "20" || rec.A.Env != nil {
		t.Errorf("record %+v", rec)
	}
	if !in.AutoPairs || in.MaxPairs != 10 || in.Equivalence != 200 || in.DisturbedAbove != 0.25 || len(in.Verdict.Primary) != 4 {
		t.Errorf("input %+v", in)
	}
	r = compareRequest(file)
	r.Pairs, r.Equivalence, r.DisturbedAbove, r.A = "3", "off", "off", "main"
	if p, err = PlanCompare(r); err != nil {
		t.Fatal(err)
	}
	if p.Record.Pairs != 3 || p.Record.MaxPairs != 0 || p.Input.Equivalence != 0 || p.Input.DisturbedAbove != -1 || p.Record.A.Ref != "main" {
		t.Errorf("fixed pairs: %+v / %+v", p.Record, p.Input)
	}
}

func TestPlanCompareRandomSeed(t *testing.T) {
	file := scenarioFile(t, "")
	seeds := map[uint64]bool{}
	for range 3 {
		p, err := PlanCompare(compareRequest(file)) // no --seed: Seed 7 is not used
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Record.Seed; got < 0 || uint64(got) != p.Input.Seed {
			t.Errorf("record seed %d, input seed %d: want the same, ≥ 0", got, p.Input.Seed)
		}
		seeds[p.Input.Seed] = true
	}
	if len(seeds) < 2 {
		t.Errorf("3 comparisons without --seed got seeds %v, want random ones", seeds)
	}
}

func TestPlanCompareBadInput(t *testing.T) {
	file := scenarioFile(t, "")
	tests := []struct {
		name string
		edit func(*CompareRequest)
		want string
	}{
		{"provider", func(r *CompareRequest) { r.Provider = "url" }, "a comparison provisions every round"},
		{"order", func(r *CompareRequest) { r.Order = "ba" }, "--order"},
		{"pairs", func(r *CompareRequest) { r.Pairs = "0" }, "--pairs"},
		{"max pairs", func(r *CompareRequest) { r.MaxPairs = 1000 }, "--max-pairs"},
		{"max duration", func(r *CompareRequest) { r.MaxDuration = -time.Second }, "--max-duration"},
		{"decide on", func(r *CompareRequest) { r.DecideOn = "speed" }, "--decide-on"},
		{"equivalence", func(r *CompareRequest) { r.Equivalence = "many" }, "--equivalence"},
		{"disturbed", func(r *CompareRequest) { r.DisturbedAbove = "2" }, "--disturbed-above"},
		{"ref and image", func(r *CompareRequest) { r.A, r.AImage = "main", "api:1" }, "--a and --a-image"},
		{"image on local", func(r *CompareRequest) { r.Provider, r.BImage = "local", "api:2" }, "--b-image: the local provider runs no images"},
		{"env", func(r *CompareRequest) { r.AEnv = []string{"X"} }, `--a-env "X"`},
		{"window", func(r *CompareRequest) { r.Window, r.Changed = 2*time.Minute, changed("window") }, "longer than a round"},
		{"warmup", func(r *CompareRequest) { r.Warmup, r.Changed = time.Minute, changed("warmup") }, "the warm-up (1m0s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := compareRequest(file)
			tt.edit(&r)
			_, err := PlanCompare(r)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err %v, want one line containing %q", err, tt.want)
			}
		})
	}
}

func TestCheckProviderOverride(t *testing.T) {
	image := scenarios.Environment{Provider: "docker", Target: scenarios.Target{Image: "api:1"}}
	repo := scenarios.Environment{Provider: "docker", Target: scenarios.Target{Build: &scenarios.Build{Repo: "."}}}
	local := scenarios.Environment{Provider: "local", Target: scenarios.Target{Command: []string{"./api"}}}
	both := scenarios.Environment{Provider: "auto", Target: scenarios.Target{Image: "api:1", Command: []string{"./api"}}}
	url := scenarios.Environment{Target: scenarios.Target{URL: "http://127.0.0.1:8080"}}
	none := scenarios.Environment{}
	tests := []struct {
		name     string
		env      scenarios.Environment
		provider string
		wantErr  string
	}{
		{"no override", none, "", ""},
		{"docker on an image", image, "docker", ""},
		{"docker on a git-ref build", repo, "docker", ""},
		{"docker on a local spec", local, "docker", "no target.image or target.build.repo"},
		{"local on a local spec", local, "local", ""},
		{"local on an image", image, "local", "no target.command"},
		{"both ways", both, "docker", ""},
		{"both ways, local", both, "local", ""},
		{"auto on an image", image, "auto", ""},
		{"auto on nothing", none, "auto", "no target.image, target.build.repo or target.command"},
		{"url on a url", url, "url", ""},
		{"url on an image", image, "url", "no environment.target.url"},
		{"a url is never provisioned", url, "docker", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckProviderOverride(tt.env, tt.provider)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckProviderOverride(%s) = %v, want nil", tt.provider, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckProviderOverride(%s) = %v, want an error containing %q", tt.provider, err, tt.wantErr)
			}
		})
	}
}
