package provision

import (
	"context"
	"fmt"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcmongodb "github.com/testcontainers/testcontainers-go/modules/mongodb"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/longhaul-dev/longhaul/scenarios"
)

// mongoDataDir is where the mongo image keeps its data.
const mongoDataDir = "/data/db"

// startMongo starts a MongoDB container (testcontainers-go's mongodb module)
// on env's network with alias "db", its data in a labelled volume and its
// port published on 127.0.0.1 only. It runs without authentication (the
// image enables it only with MONGO_INITDB_ROOT_*), as the local provider's
// server does, so {{.Database.URL}} is mongodb://db:27017/NAME and the
// probe reads the same server from 127.0.0.1.
func (d *Docker) startMongo(ctx context.Context, env Environment, img string, offline bool, spec scenarios.Database, labels map[string]string) (*DatabaseEndpoint, *templateDB, error) {
	const kind = "mongodb"
	name, usr, pw := dbNames(spec)
	vol := "longhaul-" + env.ID + "-mongodata"
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: vol, Labels: labels}); err != nil {
		return nil, nil, fmt.Errorf("start %s: create volume: %w", kind, err)
	}
	d.opts.Logger.Info("starting "+kind, "env", env.ID, "image", img, "offline", offline)
	ctr, err := tcmongodb.Run(ctx, img,
		testcontainers.WithLogger(d.tcLog),
		testcontainers.WithLabels(labels),
		tcnetwork.WithNetworkName([]string{"db"}, env.Network),
		testcontainers.WithMounts(testcontainers.VolumeMount(vol, mongoDataDir)),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = loopbackBinding("27017/tcp")
		}),
		testcontainers.WithWaitStrategyAndDeadline(3*time.Minute,
			wait.ForLog("Waiting for connections").WithStartupTimeout(3*time.Minute),
			wait.ForListeningPort("27017/tcp").WithStartupTimeout(3*time.Minute),
		),
	)
	var c testcontainers.Container
	if ctr != nil {
		c = ctr.Container
	}
	db, hostPort, err := d.moduleEndpoint(ctx, kind, img, c, "27017/tcp", err)
	if err != nil {
		return db, nil, err
	}
	db.URL = mongoURL("127.0.0.1", hostPort, name)
	db.TargetURL = mongoURL("db", 27017, name)
	return db, &templateDB{URL: db.TargetURL, DSN: db.TargetURL, Host: "db", Port: 27017, Name: name, User: usr, Password: pw}, nil
}
