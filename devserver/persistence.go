package devserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.temporal.io/server/common/config"
	"go.temporal.io/server/common/log"
	"go.temporal.io/server/common/metrics"
	persistencesql "go.temporal.io/server/common/persistence/sql"
	"go.temporal.io/server/common/persistence/sql/sqlplugin"
	_ "go.temporal.io/server/common/persistence/sql/sqlplugin/postgresql" // registers the postgres12_pgx plugin
	sqliteplugin "go.temporal.io/server/common/persistence/sql/sqlplugin/sqlite"
	"go.temporal.io/server/common/resolver"
	"go.temporal.io/server/schema/sqlite"
	schematool "go.temporal.io/server/tools/common/schema"
	sqltool "go.temporal.io/server/tools/sql"
)

// persistence is where a server keeps its state: the data stores of the
// server configuration.
type persistence struct {
	defaultStore, visibilityStore string
	stores                        map[string]config.DataStore
	where                         string // for messages: no password
	// maxPort, when > 0, bounds the services' ports: Temporal's PostgreSQL
	// schema keeps membership ports in a SMALLINT column, so a port above
	// 32767 (any port the kernel picks for :0) fails the server's start.
	maxPort int
}

// sqlitePersistence keeps everything in one SQLite file.
func sqlitePersistence(dbPath string) persistence {
	sqlCfg := &config.SQL{
		PluginName:   sqliteplugin.PluginName,
		DatabaseName: dbPath,
		// rwc: read-write, create when missing; the file survives restarts.
		// WAL with synchronous=NORMAL syncs at checkpoints rather than at
		// every commit: durable across a crash of this process (kill -9),
		// not across a power loss, which suits a dev server; schema set-up
		// and every workflow step get cheaper.
		ConnectAttributes: map[string]string{"mode": "rwc", "journal_mode": "wal", "synchronous": "normal"},
	}
	return persistence{
		defaultStore:    sqliteplugin.PluginName,
		visibilityStore: sqliteplugin.PluginName,
		stores:          map[string]config.DataStore{sqliteplugin.PluginName: {SQL: sqlCfg}},
		where:           dbPath,
	}
}

// Names of the PostgreSQL data stores in the server configuration.
const (
	pgDefaultStore    = "postgres"
	pgVisibilityStore = "postgres-visibility"
	// pgPlugin is the Temporal server's PostgreSQL plugin on pgx.
	pgPlugin = "postgres12_pgx"
	// VisibilitySuffix is appended to the database name of Options.Postgres
	// to name the visibility database.
	VisibilitySuffix = "_visibility"
)

// Temporal's schema directories (in go.temporal.io/server/schema) for
// PostgreSQL.
const (
	pgSchema           = "postgresql/v12/temporal"
	pgVisibilitySchema = "postgresql/v12/visibility"
)

// VisibilityDatabase is the name of the visibility database that a server
// on the PostgreSQL database db uses.
func VisibilityDatabase(db string) string { return db + VisibilitySuffix }

// postgresPersistence parses a postgres:// URL into the two data stores.
func postgresPersistence(dsn string) (persistence, error) {
	u, err := url.Parse(dsn)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") || u.Host == "" {
		return persistence{}, fmt.Errorf("persistence %q: want postgres://USER:PASSWORD@HOST:PORT/DATABASE", redact(dsn))
	}
	db := strings.TrimPrefix(u.Path, "/")
	if db == "" || strings.Contains(db, "/") {
		return persistence{}, fmt.Errorf("persistence %s: name the database in the URL's path (postgres://…/temporal)", redact(dsn))
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "5432")
	}
	attrs := map[string]string{}
	for k, vs := range u.Query() {
		if len(vs) > 0 {
			attrs[k] = vs[len(vs)-1]
		}
	}
	mk := func(name string) *config.SQL {
		c := &config.SQL{
			PluginName: pgPlugin, DatabaseName: name, ConnectAddr: addr, ConnectProtocol: "tcp",
			User: u.User.Username(), ConnectAttributes: attrs,
			MaxConns: 20, MaxIdleConns: 20, MaxConnLifetime: time.Hour,
		}
		c.Password, _ = u.User.Password()
		return c
	}
	return persistence{
		defaultStore:    pgDefaultStore,
		visibilityStore: pgVisibilityStore,
		stores: map[string]config.DataStore{
			pgDefaultStore:    {SQL: mk(db)},
			pgVisibilityStore: {SQL: mk(VisibilityDatabase(db))},
		},
		where:   redact(dsn),
		maxPort: 32767,
	}, nil
}

// redact is dsn without its password.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// pgSetupLock is the advisory lock key under which servers set up the
// schema: any constant, the same in every longhaul version.
const pgSetupLock = 7240712450233

// preparePostgres makes the database ready for a server: the database and
// its visibility sibling exist, both schemas are at this server's version,
// the namespace exists, and the membership rows of dead servers on this
// machine are gone.
//
// Subtleness ahead: two servers (or a server restarted by its supervisor
// while the old one still migrates) may run this at once. Creating a
// database races harmlessly (the loser sees "already exists"); everything
// else runs under a session advisory lock on the main database, so one
// server migrates while the other waits, then finds nothing to do.
func preparePostgres(ctx context.Context, dsn string, p persistence, namespace string) error {
	main := p.stores[p.defaultStore].SQL
	vis := p.stores[p.visibilityStore].SQL
	conn, err := connectCreating(ctx, dsn, main.DatabaseName)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(pgSetupLock)); err != nil {
		return fmt.Errorf("wait for the schema lock: %w", err)
	}
	// Closing the connection releases the lock as well; unlocking first
	// lets the next server go on without waiting for the close.
	defer conn.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", int64(pgSetupLock)) //nolint:errcheck

	if err := createDatabase(ctx, conn, vis.DatabaseName); err != nil {
		return err
	}
	for _, s := range []struct {
		cfg    *config.SQL
		schema string
	}{{main, pgSchema}, {vis, pgVisibilitySchema}} {
		if err := migrate(s.cfg, s.schema); err != nil {
			return fmt.Errorf("schema of database %s: %w", s.cfg.DatabaseName, err)
		}
	}
	ns, err := sqlite.NewNamespaceConfig(clusterName, namespace, false, nil)
	if err != nil {
		return fmt.Errorf("namespace %q: %w", namespace, err)
	}
	// Despite its package, CreateNamespaces works on any SQL plugin: it
	// writes the namespace row through the generic persistence layer.
	if err := sqlite.CreateNamespaces(main, ns); err != nil {
		return fmt.Errorf("create namespace %q: %w", namespace, err)
	}
	return forgetDeadLocalMembers(ctx, conn)
}

// connectCreating connects to dsn, creating its database db first when it
// does not exist (connecting to the maintenance database "postgres").
func connectCreating(ctx context.Context, dsn, db string) (*pgx.Conn, error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err == nil {
		return conn, nil
	}
	if pgCode(err) != "3D000" { // invalid_catalog_name: no such database
		return nil, fmt.Errorf("connect: %w", err)
	}
	cfg, perr := pgx.ParseConfig(dsn)
	if perr != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	cfg.Database = "postgres"
	admin, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to create database %s: %w", db, err)
	}
	err = createDatabase(ctx, admin, db)
	admin.Close(context.Background())
	if err != nil {
		return nil, err
	}
	conn, err = pgx.Connect(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return conn, nil
}

// createDatabase creates db unless it exists. Two servers creating it at
// once is fine: the loser's "already exists" is success.
func createDatabase(ctx context.Context, conn *pgx.Conn, db string) error {
	var exists bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
		return fmt.Errorf("look for database %s: %w", db, err)
	}
	if exists {
		return nil
	}
	_, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize())
	switch pgCode(err) {
	case "", "42P04", "23505": // created; duplicate_database; unique_violation (a concurrent CREATE)
		return nil
	}
	return fmt.Errorf("create database %s (the user needs CREATEDB, or create it beforehand): %w", db, err)
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// migrate brings the database of cfg to the newest version of Temporal's
// schema dir: on a new database, the version tables at 0.0 and then every
// versioned step; on a set-up one, the steps it lacks (none, usually). This
// is what Temporal's own auto-setup does with temporal-sql-tool.
func migrate(cfg *config.SQL, schemaDir string) error {
	logger := log.NewNoopLogger()
	conn, err := sqltool.NewConnection(cfg, logger)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close()
	setup := &schematool.SetupConfig{InitialVersion: "0.0"}
	if err := schematool.NewSetupSchemaTask(conn, setup, logger).Run(); err != nil {
		return fmt.Errorf("set up version tables: %w", err)
	}
	update := &schematool.UpdateConfig{DBName: cfg.DatabaseName, SchemaName: schemaDir}
	if err := schematool.NewUpdateSchemaTask(conn, update, logger).Run(); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	return nil
}

// forgetDeadLocalMembers deletes the cluster membership rows of servers on
// this machine that are gone. A stopped or killed server's services stay
// listed until their heartbeats are 20 s old, and a new server would try to
// join them and route requests to them meanwhile. Every member advertises
// 127.0.0.1 (see host), so a member whose membership port nobody holds on
// this machine is dead.
func forgetDeadLocalMembers(ctx context.Context, conn *pgx.Conn) error {
	rows, err := conn.Query(ctx, "SELECT DISTINCT rpc_port FROM cluster_membership WHERE rpc_address = $1", host)
	if err != nil {
		return fmt.Errorf("read cluster membership: %w", err)
	}
	ports, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("read cluster membership: %w", err)
	}
	for _, port := range ports {
		if !portFree(int(port)) {
			continue
		}
		if _, err := conn.Exec(ctx, "DELETE FROM cluster_membership WHERE rpc_address = $1 AND rpc_port = $2", host, port); err != nil {
			return fmt.Errorf("forget dead member %s: %w", net.JoinHostPort(host, strconv.Itoa(int(port))), err)
		}
	}
	return nil
}

// forgetMembers empties the membership table of an existing SQLite file.
// The previous process's services are still listed there (with their old
// ports) until their records expire, and the new services would route
// requests to them for up to a minute: a workflow that was waiting when the
// server stopped would stall that long after a restart. The data directory
// lock guarantees that nobody else serves this file.
func forgetMembers(cfg *config.SQL) error {
	db, err := persistencesql.NewSQLAdminDB(sqlplugin.DbKindUnknown, cfg, resolver.NewNoopResolver(), log.NewNoopLogger(), metrics.NoopMetricsHandler)
	if err != nil {
		return fmt.Errorf("open %s: %w", cfg.DatabaseName, err)
	}
	defer db.Close()
	if err := db.Exec("DELETE FROM cluster_membership"); err != nil {
		return fmt.Errorf("reset cluster membership in %s: %w", cfg.DatabaseName, err)
	}
	return nil
}

// SetPersistence keeps the server's state where the user said (longhaul
// server --persistence, else $LONGHAUL_PERSISTENCE): a postgres:// or
// postgresql:// URL sets Postgres, any other value is the SQLite file
// DBFile, and "" keeps it in the directory dataDir returns (asked only
// then, so that a bad data directory matters only when it is used).
func (o *Options) SetPersistence(persistence string, dataDir func() (string, error)) error {
	switch {
	case strings.HasPrefix(persistence, "postgres://") || strings.HasPrefix(persistence, "postgresql://"):
		o.Postgres = persistence
	case persistence != "":
		o.DBFile = persistence
	default:
		dir, err := dataDir()
		if err != nil {
			return err
		}
		o.DataDir = dir
	}
	return nil
}
