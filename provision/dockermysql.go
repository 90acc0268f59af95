package provision

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcmysql "github.com/testcontainers/testcontainers-go/modules/mysql"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/longhaul-dev/longhaul/internal/mysqlserver"
	"github.com/longhaul-dev/longhaul/scenarios"
)

// mysqlDataDir is where the database's labelled volume is mounted in the
// mysql, mariadb and offline images alike.
const mysqlDataDir = "/var/lib/mysql"

// startMySQL starts a MySQL or MariaDB container (testcontainers-go's mysql
// module, which runs the mariadb and offline images too: all of them take
// the MYSQL_* variables) on env's network with alias "db", its data in a
// labelled volume and the performance schema on (MySQL 8.4 has it on
// already; MariaDB's images do not). The target connects as the scenario's
// user; the probe as root, whom the images give the same password, so it can
// read the performance schema.
func (d *Docker) startMySQL(ctx context.Context, env Environment, img string, offline bool, spec scenarios.Database, labels map[string]string) (*DatabaseEndpoint, *templateDB, error) {
	kind := dbKind(spec)
	name, usr, pw := dbNames(spec)
	vol := "longhaul-" + env.ID + "-" + kind + "data"
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: vol, Labels: labels}); err != nil {
		return nil, nil, fmt.Errorf("start %s: create volume: %w", kind, err)
	}
	d.opts.Logger.Info("starting "+kind, "env", env.ID, "image", img, "offline", offline)
	// MySQL's server logs "port: 3306  MySQL Community Server" when the
	// real server (not the entrypoint's temporary one, which listens on no
	// port) is ready; MariaDB's logs "port: 3306" then its distribution.
	ready := wait.ForLog("port: 3306  MySQL Community Server")
	if !strings.HasPrefix(img, "mysql:") && !strings.Contains(img, "/mysql:") {
		ready = wait.ForLog("port: 3306")
	}
	ctr, err := tcmysql.Run(ctx, img,
		testcontainers.WithLogger(d.tcLog),
		tcmysql.WithDatabase(name),
		tcmysql.WithUsername(usr),
		tcmysql.WithPassword(pw),
		testcontainers.WithCmdArgs("--performance-schema=ON", "--skip-log-bin"),
		testcontainers.WithWaitStrategyAndDeadline(3*time.Minute,
			ready.WithStartupTimeout(3*time.Minute),
			wait.ForListeningPort("3306/tcp").WithStartupTimeout(3*time.Minute),
		),
		testcontainers.WithLabels(labels),
		tcnetwork.WithNetworkName([]string{"db"}, env.Network),
		testcontainers.WithMounts(testcontainers.VolumeMount(vol, mysqlDataDir)),
		// The module also exposes the X protocol's 33060, which would be
		// published on every address: only 3306, on 127.0.0.1, is.
		testcontainers.CustomizeRequestOption(func(req *testcontainers.GenericContainerRequest) error {
			req.ExposedPorts = []string{"3306/tcp"}
			return nil
		}),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.PortBindings = loopbackBinding("3306/tcp")
		}),
	)
	var c testcontainers.Container
	if ctr != nil {
		c = ctr.Container
	}
	db, hostPort, err := d.moduleEndpoint(ctx, kind, img, c, "3306/tcp", err)
	if err != nil {
		return db, nil, err
	}
	db.URL = mysqlURL(kind, "root", pw, "127.0.0.1", hostPort, name)
	db.TargetURL = mysqlURL(kind, usr, pw, "db", 3306, name)
	return db, &templateDB{URL: db.TargetURL, DSN: mysqlserver.DriverDSN(usr, pw, "db", 3306, name), Host: "db", Port: 3306, Name: name, User: usr, Password: pw}, nil
}
