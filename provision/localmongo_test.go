package provision

import (
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/longhaul-dev/longhaul/internal/mongoserver"
	"github.com/longhaul-dev/longhaul/scenarios"
)

func skipWithoutMongo(t *testing.T) {
	t.Helper()
	if _, err := mongoserver.Find(); err != nil {
		t.Skip(err)
	}
}

// TestLocalWithMongoDB: database.kind mongodb on the local provider starts a
// private mongod (or FerretDB) on a loopback port, renders
// {{.Database.URL}} as mongodb://127.0.0.1:PORT/NAME for the target, takes
// writes, and is gone after Teardown.
func TestLocalWithMongoDB(t *testing.T) {
	skipWithoutMongo(t)
	l, _ := newTestLocal(t)
	ctx := testContext(t, 2*time.Minute)
	spec := localSpec(t, map[string]string{"DATABASE_URL": "{{.Database.URL}}", "DB_NAME": "{{.Database.Name}}", "DB_PORT": "{{.Database.Port}}"})
	spec.Database = scenarios.Database{Kind: "mongodb", Name: "shop"}
	env, err := l.Provision(ctx, Request{RunID: "local-mongodb", Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Teardown(context.Background(), env) })

	db := env.Database
	if db == nil || db.Kind != "mongodb" || db.Process.PID == 0 || db.Process.DataDir == "" || db.URL != db.TargetURL {
		t.Fatalf("env.Database = %+v, want a local mongodb with PID, data dir and one URL", db)
	}
	u, err := url.Parse(db.URL)
	if err != nil || u.Scheme != "mongodb" || u.Path != "/shop" || u.User != nil || !strings.HasPrefix(u.Host, "127.0.0.1:") {
		t.Fatalf("URL %q (%v): want mongodb://127.0.0.1:PORT/shop", db.URL, err)
	}
	if got := get(t, env.TargetURL+"/env/DATABASE_URL"); got != db.URL {
		t.Errorf("target DATABASE_URL = %q, want %q", got, db.URL)
	}
	if got := get(t, env.TargetURL+"/env/DB_NAME"); got != "shop" {
		t.Errorf("target DB_NAME = %q, want shop", got)
	}
	if got := get(t, env.TargetURL+"/env/DB_PORT"); !strings.HasSuffix(u.Host, ":"+got) {
		t.Errorf("target DB_PORT = %q, want the URL's port (%s)", got, u.Host)
	}
	c, err := mongo.Connect(options.Client().ApplyURI(db.URL))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Database("shop").Collection("t").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}})
	var n int64
	if err == nil {
		n, err = c.Database("shop").Collection("t").CountDocuments(ctx, bson.D{})
	}
	c.Disconnect(ctx)
	if err != nil || n != 1 {
		t.Errorf("insert and count: %d documents (%v), want 1", n, err)
	}
	if err := l.Check(ctx, env); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := l.Teardown(ctx, env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	assertGone(t, env)
}

// TestLocalMongoDBSurvivesOwnerDeath: a worker killed right after it
// provisioned a MongoDB leaves an environment another worker can check and
// tear down completely (the database process found by its marker).
func TestLocalMongoDBSurvivesOwnerDeath(t *testing.T) {
	skipWithoutMongo(t)
	testDatabaseSurvivesOwnerDeath(t, "mongodb")
}

// TestLocalMongoDBWorkerKilledWhileProvisioning: a worker killed after the
// database is up but before Provision returns (the target never answers its
// health check) leaves state that longhaul sweep removes completely: the
// database process, the target and both directories.
func TestLocalMongoDBWorkerKilledWhileProvisioning(t *testing.T) {
	skipWithoutMongo(t)
	data := t.TempDir()
	spec := localSpec(t, nil)
	spec.Target.Health = "/never-answers"
	spec.Target.HealthTimeout = scenarios.Duration(time.Minute)
	spec.Database = scenarios.Database{Kind: "mongodb"}
	req, _ := json.Marshal(Request{RunID: "killed-mongodb", Spec: spec})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=provision", "LONGHAUL_TEST_DATA="+data, "LONGHAUL_TEST_PROVIDER=local")
	cmd.Stdin = strings.NewReader(string(req))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })

	// The worker is inside Provision, waiting for the target's health,
	// once the state names both the database's URL and the target's PID.
	state := filepath.Join(data, "provision", EnvironmentID("killed-mongodb", 0), stateFile)
	deadline := time.Now().Add(time.Minute)
	var env Environment
	for {
		if b, err := os.ReadFile(state); err == nil && json.Unmarshal(b, &env) == nil &&
			env.Database != nil && env.Database.URL != "" && env.Target.PID > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker did not get as far as the target's health check within a minute (state: %+v)", env)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if !alive(env.Database.Process.PID) {
		t.Fatalf("the database (pid %d) died with the worker; the test proves nothing", env.Database.Process.PID)
	}

	l := NewLocal(Options{DataDir: data, StopGrace: 5 * time.Second, Logger: testLogger(t)})
	ctx := testContext(t, time.Minute)
	removed, err := l.Sweep(ctx, func(string) bool { return false })
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	if len(removed) != 1 || !strings.Contains(removed[0], "killed-mongodb") {
		t.Errorf("Sweep removed %v, want the killed worker's environment", removed)
	}
	assertGone(t, env)
}
