package provision

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/longhaul-dev/longhaul/probes"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// TestDockerTargetWithMongoDB: database.kind mongodb on the docker provider
// runs mongo:7 on the run's network as db:27017 and on 127.0.0.1 only; the
// target gets mongodb://db:27017/NAME; the probe reads the collection from
// the host; teardown leaves nothing labelled. There is no offline image:
// without mongo:7 in the engine the test is skipped.
func TestDockerTargetWithMongoDB(t *testing.T) {
	d := dockerForTest(t)
	ctx := testContext(t, 5*time.Minute)
	if !d.imagePresent(ctx, DefaultMongoImage) {
		t.Skipf("%s is not present and no registry answers here (MongoDB has no Debian package to build an offline image from): docker load one to run this test", DefaultMongoImage)
	}
	img := testTag("target")
	buildTestImage(t, d, img)
	spec := scenarios.Environment{
		Provider: "docker",
		Target: scenarios.Target{
			Image:         img,
			Env:           map[string]string{"DATABASE_URL": "{{.Database.URL}}"},
			Health:        "/health",
			HealthTimeout: scenarios.Duration(30 * time.Second),
		},
		Database: scenarios.Database{Kind: "mongodb", Name: "shop"},
	}
	env, err := d.Provision(ctx, Request{RunID: "docker-mongodb", Incarnation: 1, Spec: spec})
	t.Cleanup(func() { d.Teardown(context.Background(), env) })
	if err != nil {
		t.Fatal(err)
	}
	db := env.Database
	if db == nil || db.Kind != "mongodb" || db.Process.ContainerID == "" || db.TargetURL != "mongodb://db:27017/shop" || !strings.HasPrefix(db.URL, "mongodb://127.0.0.1:") {
		t.Fatalf("env.Database = %+v, want a mongo container as db:27017, and 127.0.0.1 for the probe", db)
	}
	if got := get(t, env.TargetURL+"/env/DATABASE_URL"); got != db.TargetURL {
		t.Errorf("target DATABASE_URL = %q, want %q", got, db.TargetURL)
	}
	if got := get(t, env.TargetURL+"/dial?addr=db:27017"); got != "ok\n" {
		t.Errorf("target cannot reach db:27017 on the run's network: %q", got)
	}
	c, err := mongo.Connect(options.Client().ApplyURI(db.URL))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Database("shop").Collection("items").InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}})
	c.Disconnect(ctx)
	if err != nil {
		t.Fatalf("insert from the host: %v", err)
	}
	r, err := probes.NewMongoStatsReader(db.URL)
	if err != nil {
		t.Fatal(err)
	}
	st, tot, err := r.ReadTotals(ctx)
	r.Close()
	if err != nil {
		t.Fatalf("probe reading: %v", err)
	}
	found := false
	for _, tb := range st.Tables {
		found = found || (tb.Name == "items" && tb.LiveRows == 2)
	}
	if !found || len(tot.Absent) > 0 {
		t.Errorf("probe tables = %+v, absent %v: want items with 2 documents and every reading", st.Tables, tot.Absent)
	}
	ins, err := d.cli.ContainerInspect(ctx, db.Process.ContainerID, client.ContainerInspectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for port, bs := range ins.Container.HostConfig.PortBindings {
		for _, b := range bs {
			if b.HostIP.String() != "127.0.0.1" {
				t.Errorf("database port %s published on %q, want 127.0.0.1 only", port, b.HostIP)
			}
		}
	}
	if err := d.Check(ctx, env); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := d.Teardown(ctx, env); err != nil {
		t.Fatalf("Teardown: %v", err)
	}
	assertNoLabelled(t, d, LabelEnv, env.ID)
	if err := d.Check(ctx, env); !errors.Is(err, ErrGone) {
		t.Errorf("Check after teardown = %v, want ErrGone", err)
	}
}

// A mongodb database with no mongo image in the engine and no registry is
// one line naming the image and what to do, before anything is created.
func TestDockerMongoDBImageMissing(t *testing.T) {
	d := dockerForTest(t)
	ctx := testContext(t, 2*time.Minute)
	const img = "longhaul-test/mongo-absent:0"
	_, _, err := d.databaseImage(ctx, scenarios.Database{Kind: "mongodb", Image: img})
	if !errors.Is(err, ErrImageMissing) || !strings.Contains(err.Error(), img) || !strings.Contains(err.Error(), "no offline mongodb image") || strings.Contains(err.Error(), "\n") {
		t.Errorf("err = %v, want one line naming %s and that there is no offline image", err, img)
	}
}
