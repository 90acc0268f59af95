package provision

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/longhaul-dev/longhaul/scenarios"
	"github.com/moby/moby/api/types/container"
)

func TestParseBytes(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"1024", 1024, false},
		{"512m", 512 << 20, false},
		{"1g", 1 << 30, false},
		{"1GiB", 1 << 30, false},
		{"1.5g", 3 << 29, false},
		{"64kb", 64 << 10, false},
		{" 2 G ", 2 << 30, false},
		{"", 0, true},
		{"lots", 0, true},
		{"12q", 0, true},
		{"-1g", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseBytes(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("ParseBytes(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil && !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("ParseBytes(%q) error %v does not wrap ErrInvalidSpec", tt.in, err)
		}
		if got != tt.want {
			t.Errorf("ParseBytes(%q) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestRender(t *testing.T) {
	db := &templateDB{URL: "postgres://u:p@db:5432/n?sslmode=disable"}
	lookup := func(name string) (string, bool) {
		if name == "TOKEN" {
			return "s3cr{{et}}", true // a value that looks like a template stays data
		}
		return "", false
	}
	tests := []struct {
		name    string
		text    string
		data    templateData
		want    string
		wantErr string
	}{
		{"plain", "hello", templateData{}, "hello", ""},
		{"port", ":{{.Port}}", templateData{Port: 8081}, ":8081", ""},
		{"database", "{{.Database.URL}}", templateData{Database: db}, db.URL, ""},
		{"secret", "Bearer ${env:TOKEN}", templateData{}, "Bearer s3cr{{et}}", ""},
		{"run", "{{.RunID}}/{{.Incarnation}}", templateData{RunID: "r1", Incarnation: 2}, "r1/2", ""},
		{"env dir", "{{.EnvDir}}/api", templateData{EnvDir: "/data/provision/r1-1"}, "/data/provision/r1-1/api", ""},
		{"unset env", "${env:NOPE}", templateData{}, "", "${env:NOPE} is not set"},
		{"no database", "{{.Database.URL}}", templateData{}, "", "database.kind is none"},
		{"bad template", "{{.Port", templateData{}, "", "x:"},
		{"unknown field", "{{.Nope}}", templateData{}, "", "Nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := render("x", tt.text, tt.data, lookup)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalidSpec) {
					t.Fatalf("render(%q) error = %v, want one containing %q wrapping ErrInvalidSpec", tt.text, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("render(%q): %v", tt.text, err)
			}
			if got != tt.want {
				t.Errorf("render(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

func TestRenderEnv(t *testing.T) {
	got, err := renderEnv(map[string]string{"A": "{{.Port}}", "B": "spec"}, map[string]string{"B": "extra"}, 9000, templateData{Port: 9000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"A=9000", "B=extra", "PORT=9000"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("renderEnv = %v, want %v", got, want)
	}
	got, _ = renderEnv(map[string]string{"PORT": "1"}, nil, 9000, templateData{}, nil)
	if strings.Join(got, " ") != "PORT=1" {
		t.Errorf("renderEnv with PORT in spec = %v, want [PORT=1]", got)
	}
}

func TestEnvironmentID(t *testing.T) {
	tests := []struct {
		run  string
		inc  int
		want string
	}{
		{"run-1", 0, "run-1-0"},
		{"01HZX4", 3, "01HZX4-3"},
		{"a/b c", 1, "a-b-c-" + hex8("a/b c") + "-1"},
		{"", 0, "run-" + hex8("") + "-0"},
		{strings.Repeat("x", 60), 1, strings.Repeat("x", 39) + "-" + hex8(strings.Repeat("x", 60)) + "-1"},
	}
	for _, tt := range tests {
		if got := EnvironmentID(tt.run, tt.inc); got != tt.want {
			t.Errorf("EnvironmentID(%q, %d) = %q, want %q", tt.run, tt.inc, got, tt.want)
		}
	}
}

func hex8(s string) string {
	const digits = "0123456789abcdef"
	h := fnv32(s)
	b := make([]byte, 8)
	for i := 7; i >= 0; i-- {
		b[i] = digits[h&15]
		h >>= 4
	}
	return string(b)
}

func TestImageName(t *testing.T) {
	tests := []struct {
		repo, ctx, dockerfile string
		want                  string
	}{
		{"/src/demo-target", "", "Dockerfile", "demo-target"},
		{"/src/Demo_Target/", "", "Dockerfile", "demo-target"},
		{"https://example.com/org/api.git", "", "Dockerfile", "api"},
		{"git@example.com:org/api.git", "", "Dockerfile", "api"},
		{"/src/mono", "services/api", "Dockerfile", "mono-" + hex8("services/api\x00Dockerfile")},
		{"/src/mono", "", "Dockerfile.soak", "mono-" + hex8("\x00Dockerfile.soak")},
	}
	for _, tt := range tests {
		if got := imageName(tt.repo, tt.ctx, tt.dockerfile); got != tt.want {
			t.Errorf("imageName(%q, %q, %q) = %q, want %q", tt.repo, tt.ctx, tt.dockerfile, got, tt.want)
		}
	}
}

func TestContainerLimits(t *testing.T) {
	tests := []struct {
		in                  scenarios.Resources
		mem, nanoCPUs, pids int64
		wantErr             bool
	}{
		{scenarios.Resources{}, DefaultMemoryBytes, 1e9, DefaultPIDs, false},
		{scenarios.Resources{Memory: "256m", CPUs: 0.5, PIDs: 64}, 256 << 20, 5e8, 64, false},
		{scenarios.Resources{Memory: "1k"}, 0, 0, 0, true},
		{scenarios.Resources{CPUs: -1}, 0, 0, 0, true},
		{scenarios.Resources{PIDs: -5}, 0, 0, 0, true},
	}
	for _, tt := range tests {
		got, err := containerLimits(tt.in)
		if (err != nil) != tt.wantErr {
			t.Errorf("containerLimits(%+v) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		if got.Memory != tt.mem || got.MemorySwap != tt.mem || got.NanoCPUs != tt.nanoCPUs || *got.PidsLimit != tt.pids {
			t.Errorf("containerLimits(%+v) = mem %d swap %d cpus %d pids %d, want %d %d %d %d", tt.in,
				got.Memory, got.MemorySwap, got.NanoCPUs, *got.PidsLimit, tt.mem, tt.mem, tt.nanoCPUs, tt.pids)
		}
	}
}

func TestTailBuffer(t *testing.T) {
	tb := &tailBuffer{n: 3}
	for i := 1; i <= 5; i++ {
		tb.Write([]byte("line " + string(rune('0'+i)) + "\n"))
	}
	tb.Write([]byte("partial"))
	got := tb.String()
	want := "  line 4\n  line 5\n  partial"
	if got != want {
		t.Errorf("tail = %q, want %q", got, want)
	}
}

func TestDemux(t *testing.T) {
	frame := func(stream byte, s string) []byte {
		n := len(s)
		return append([]byte{stream, 0, 0, 0, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)}, s...)
	}
	in := append(frame(1, "out\n"), frame(2, "err\n")...)
	if got, want := string(demux(in)), "out\nerr\n"; got != want {
		t.Errorf("demux = %q, want %q", got, want)
	}
	if got, want := string(demux([]byte("tty output\n"))), "tty output\n"; got != want {
		t.Errorf("demux(tty) = %q, want %q", got, want)
	}
}

func TestNewRejectsUnknownKind(t *testing.T) {
	_, err := New("kubernetes", Options{})
	if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), "auto, docker, local, url") {
		t.Fatalf("New(kubernetes) error = %v, want ErrInvalidSpec listing the kinds", err)
	}
}

func TestURLProvider(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	p, err := New("", Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, 10e9)
	req := Request{RunID: "u1", Spec: scenarios.Environment{Target: scenarios.Target{URL: srv.URL + "/"}}}
	env, err := p.Provision(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if env.Provider != "url" || env.TargetURL != srv.URL {
		t.Errorf("env = provider %q url %q, want url %q", env.Provider, env.TargetURL, srv.URL)
	}
	if err := p.Check(ctx, env); err != nil {
		t.Errorf("Check on a live server: %v", err)
	}
	srv.Close()
	if err := p.Check(ctx, env); !errors.Is(err, ErrGone) {
		t.Errorf("Check on a closed server = %v, want ErrGone", err)
	}
	if err := p.Teardown(ctx, env); err != nil {
		t.Errorf("Teardown of a url environment: %v", err)
	}

	for _, bad := range []scenarios.Target{
		{URL: "127.0.0.1:8080"},
		{URL: "http://127.0.0.1:1", Image: "x"},
	} {
		if _, err := p.Provision(ctx, Request{RunID: "u2", Spec: scenarios.Environment{Target: bad}}); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("Provision(%+v) error = %v, want ErrInvalidSpec", bad, err)
		}
	}
}

func TestResolveRefLocal(t *testing.T) {
	repo := t.TempDir()
	gitT(t, repo, "init", "-q")
	os.WriteFile(filepath.Join(repo, "f"), []byte("1"), 0o644)
	gitT(t, repo, "add", ".")
	gitT(t, repo, "commit", "-q", "-m", "one")
	gitT(t, repo, "tag", "-a", "v1", "-m", "v1")
	head := gitT(t, repo, "rev-parse", "HEAD")
	ctx := context.Background()
	for _, ref := range []string{"HEAD", "v1", head[:8]} {
		got, err := resolveRef(ctx, repo, ref, false)
		if err != nil || got != head {
			t.Errorf("resolveRef(%q) = %q, %v; want %q", ref, got, err, head)
		}
	}
	if _, err := resolveRef(ctx, repo, "nope", false); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("resolveRef(nope) error = %v, want ErrInvalidSpec", err)
	}
	// A file:// URL goes through ls-remote; an annotated tag resolves to its commit.
	got, err := resolveRef(ctx, "file://"+repo, "v1", true)
	if err != nil || got != head {
		t.Errorf("resolveRef(file://, v1) = %q, %v; want %q", got, err, head)
	}
}

// gitT runs git in dir with a fixed identity and returns its output.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestDockerRequest: target.command is the container's command only in a
// spec whose own provider is docker; in an auto (or local) spec it is the
// local provider's argv and the container runs the image's own command.
func TestDockerRequest(t *testing.T) {
	tests := []struct {
		specProvider string
		want         []string
	}{
		{"docker", []string{"serve", "--fast"}},
		{"auto", nil},
		{"local", nil},
		{"", nil},
	}
	for _, tt := range tests {
		t.Run("provider "+tt.specProvider, func(t *testing.T) {
			cmd := []string{"serve", "--fast"}
			req := Request{Provider: "docker", Spec: scenarios.Environment{Provider: tt.specProvider,
				Target: scenarios.Target{Image: "api:1", Command: cmd}}}
			got := dockerRequest(req).Spec.Target.Command
			if !slices.Equal(got, tt.want) {
				t.Errorf("container command = %q, want %q", got, tt.want)
			}
			if len(req.Spec.Target.Command) != 2 {
				t.Errorf("dockerRequest changed the caller's spec: %q", req.Spec.Target.Command)
			}
		})
	}
}

func TestWhyStopped(t *testing.T) {
	oom := container.InspectResponse{
		State:      &container.State{Status: container.StateExited, OOMKilled: true, ExitCode: 137},
		HostConfig: &container.HostConfig{Resources: container.Resources{Memory: 1 << 30}},
	}
	tests := []struct {
		c       container.InspectResponse
		setting string
		want    string
	}{
		{oom, "target.resources.memory", " (killed for running out of memory: it reached its limit of 1024 MiB — target.resources.memory sets it)"},
		{oom, "", " (killed for running out of memory: it reached its limit of 1024 MiB)"},
		{container.InspectResponse{State: &container.State{Status: container.StateExited, ExitCode: 2}}, "", " (exited with code 2)"},
		{container.InspectResponse{State: &container.State{Status: container.StatePaused}}, "", " (paused)"},
		{container.InspectResponse{}, "", ""},
	}
	for _, tt := range tests {
		if got := whyStopped(tt.c, tt.setting); got != tt.want {
			t.Errorf("whyStopped(%+v) = %q, want %q", tt.c.State, got, tt.want)
		}
	}
}
