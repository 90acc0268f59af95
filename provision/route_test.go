package provision

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/longhaul-dev/longhaul/netns"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// getInNamespace is get through the target's network namespace.
func getInNamespace(t *testing.T, target netns.Target, path string) string {
	t.Helper()
	n, err := netns.OpenTarget(target)
	if err != nil {
		t.Fatalf("open %s: %v", target.Path, err)
	}
	defer n.Close()
	c := &http.Client{Transport: &http.Transport{DialContext: n.DialContext}, Timeout: 10 * time.Second}
	resp, err := c.Get(target.URL + path)
	if err != nil {
		t.Fatalf("GET %s%s in %s: %v", target.URL, path, target.ID, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s%s in %s: %s %s", target.URL, path, target.ID, resp.Status, b)
	}
	return string(b)
}

// TestDockerRoute: a target listening on all addresses of its container is
// reached inside the container's network namespace on its loopback; one
// bound to its bridge address only, a worker without CAP_SYS_ADMIN and a
// worker that asks for it get the published port, said in the notes; a
// worker that demands the namespace route where it is impossible fails the
// provision and leaves nothing.
func TestDockerRoute(t *testing.T) {
	d := dockerForTest(t)
	img := testTag("target")
	buildTestImage(t, d, img)
	spec := func(env map[string]string) scenarios.Environment {
		return scenarios.Environment{Provider: "docker", Target: scenarios.Target{
			Image: img, Health: "/health", Env: env, HealthTimeout: scenarios.Duration(30 * time.Second),
		}}
	}
	provision := func(t *testing.T, d *Docker, run string, env map[string]string) Environment {
		t.Helper()
		ctx := testContext(t, 2*time.Minute)
		e, err := d.Provision(ctx, Request{RunID: run, Incarnation: 1, Spec: spec(env)})
		t.Cleanup(func() { d.Teardown(context.Background(), e) })
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Check(ctx, e); err != nil {
			t.Errorf("Check: %v", err)
		}
		return e
	}
	notes := func(e Environment) string { return strings.Join(e.Notes, "\n") }

	t.Run("netns", func(t *testing.T) {
		e := provision(t, d, "route-netns", nil)
		if e.Route != RouteNetNS || e.NetNS == nil {
			t.Fatalf("route %q, netns %+v, notes %q: want %s", e.Route, e.NetNS, e.Notes, RouteNetNS)
		}
		if e.NetNS.URL != "http://127.0.0.1:8080" {
			t.Errorf("URL in the namespace %q, want the container's own 127.0.0.1:8080", e.NetNS.URL)
		}
		if link, err := os.Readlink(e.NetNS.Path); err != nil || link != e.NetNS.ID {
			t.Errorf("netns %+v: readlink %q (%v)", e.NetNS, link, err)
		}
		if got := getInNamespace(t, *e.NetNS, "/health"); got != "ok\n" {
			t.Errorf("health in the namespace = %q", got)
		}
		if !strings.HasPrefix(e.TargetURL, "http://127.0.0.1:") {
			t.Errorf("TargetURL %q: the published port stays as the fallback", e.TargetURL)
		}
		get(t, e.TargetURL+"/health")
		// A recorded namespace that is no longer the container's: gone.
		moved := e
		moved.NetNS = &netns.Target{Path: "/proc/self/ns/net", ID: e.NetNS.ID, URL: e.NetNS.URL}
		if err := d.Check(testContext(t, time.Minute), moved); !errors.Is(err, ErrGone) {
			t.Errorf("Check with a changed namespace = %v, want ErrGone", err)
		}
	})

	t.Run("bridge address only", func(t *testing.T) {
		e := provision(t, d, "route-bridge", map[string]string{"LISTEN_ON_HOSTNAME": "1"})
		if e.Route != RoutePublishedPort || e.NetNS != nil {
			t.Fatalf("route %q, netns %+v: want %s", e.Route, e.NetNS, RoutePublishedPort)
		}
		if n := notes(e); !strings.Contains(n, "does not answer on its container's loopback") || !strings.Contains(n, ":8080 only") {
			t.Errorf("notes %q: want the reason, naming the address the target listens on", n)
		}
		get(t, e.TargetURL+"/health")
	})

	t.Run("options ask for the published port", func(t *testing.T) {
		pd, err := NewDocker(context.Background(), Options{DataDir: t.TempDir(), StopGrace: time.Second, Logger: testLogger(t), Route: RoutePublishedPort})
		if err != nil {
			t.Fatal(err)
		}
		e := provision(t, pd, "route-asked", nil)
		if e.Route != RoutePublishedPort || e.NetNS != nil || !strings.Contains(notes(e), "options ask") {
			t.Errorf("route %q, netns %+v, notes %q", e.Route, e.NetNS, e.Notes)
		}
	})

	t.Run("demanded but impossible", func(t *testing.T) {
		nd, err := NewDocker(context.Background(), Options{DataDir: t.TempDir(), StopGrace: time.Second, Logger: testLogger(t), Route: RouteNetNS})
		if err != nil {
			t.Fatal(err)
		}
		ctx := testContext(t, 2*time.Minute)
		e, err := nd.Provision(ctx, Request{RunID: "route-demanded", Incarnation: 1, Spec: spec(map[string]string{"LISTEN_ON_HOSTNAME": "1"})})
		t.Cleanup(func() { nd.Teardown(context.Background(), e) })
		if err == nil || !strings.Contains(err.Error(), "route netns") {
			t.Fatalf("Provision = %v, want the netns route's failure", err)
		}
		assertNoLabelled(t, d, LabelRun, "route-demanded")
	})

	// A worker without CAP_SYS_ADMIN (setpriv drops it before the helper
	// starts): setns is refused for real, and the route falls back.
	t.Run("not permitted", func(t *testing.T) {
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Skip("setpriv (util-linux) is not installed")
		}
		e := provisionInHelperVia(t, []string{setpriv, "--inh-caps=-all", "--bounding-set=-sys_admin", "--"},
			"docker", t.TempDir(), Request{RunID: "route-eperm", Incarnation: 1, Spec: spec(nil)})
		t.Cleanup(func() { d.Teardown(context.Background(), e) })
		if e.Route != RoutePublishedPort || e.NetNS != nil {
			t.Fatalf("route %q, netns %+v: want %s", e.Route, e.NetNS, RoutePublishedPort)
		}
		if n := notes(e); !strings.Contains(n, "CAP_SYS_ADMIN") || !strings.Contains(n, "not permitted") {
			t.Errorf("notes %q: want the refusal and what it needs", n)
		}
		get(t, e.TargetURL+"/health")
		if err := d.Check(testContext(t, time.Minute), e); err != nil {
			t.Errorf("Check: %v", err)
		}
	})
}

func TestContainerOwnsPID(t *testing.T) {
	root := t.TempDir()
	old := procRoot
	procRoot = root
	t.Cleanup(func() { procRoot = old })
	const id = "aa2f4beb5ef485a290a978bb98ae966f4b7c98bf694eb5caf97092a6f62781b6"
	mk := func(pid, cgroup, ns string) {
		dir := filepath.Join(root, pid, "ns")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(root, pid, "cgroup"), []byte(cgroup), 0o644)
		os.Symlink(ns, filepath.Join(dir, "net"))
	}
	mk("100", "0::/docker/"+id+"\n", "net:[1]")
	mk("200", "0::/system.slice/docker-"+id+".scope\n", "net:[2]")
	mk("300", "0::/user.slice\n", "net:[3]")
	cases := []struct {
		pid     int
		ns      string
		wantErr string
	}{
		{100, "net:[1]", ""},
		{200, "net:[2]", ""},
		{300, "net:[3]", "not the target container's process"},
		{100, "net:[9]", "changed network namespace"},
		{400, "net:[4]", "read the cgroup"},
	}
	for _, c := range cases {
		err := containerOwnsPID(id, c.pid, c.ns)
		if (err == nil) != (c.wantErr == "") || (err != nil && !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("pid %d, %s: %v, want %q", c.pid, c.ns, err, c.wantErr)
		}
	}
}

func TestDockerRouteOption(t *testing.T) {
	if _, err := NewDocker(context.Background(), Options{Route: "bridge"}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("NewDocker with route bridge: %v, want ErrInvalidSpec", err)
	}
	if _, err := New("auto", Options{Route: "bridge"}); !errors.Is(err, ErrInvalidSpec) {
		t.Errorf("New with route bridge: %v, want ErrInvalidSpec", err)
	}
	for _, r := range []string{"", "auto", RouteNetNS, RoutePublishedPort} {
		if err := checkRoute(r); err != nil {
			t.Errorf("route %q: %v", r, err)
		}
	}
}
