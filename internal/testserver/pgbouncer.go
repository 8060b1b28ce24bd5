package testserver

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	// The pgx driver of sql.Open("pgx", ...).
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/softalloc/softalloc/internal/freeport"
)

// PgBouncerOptions sizes the PgBouncer StartPgBouncer runs. A zero value
// is PgBouncer's default.
type PgBouncerOptions struct {
	// PoolSize is default_pool_size (PgBouncer's default 20).
	PoolSize int
	// ReservePoolSize is reserve_pool_size (default 0): the server
	// connections a pool may add when a client has waited
	// ReservePoolTimeout.
	ReservePoolSize int
	// ReservePoolTimeout is reserve_pool_timeout (default 5 s); PgBouncer
	// reads it in seconds, fractions allowed.
	ReservePoolTimeout time.Duration
	// MaxClientConn is max_client_conn (default 100).
	MaxClientConn int
	// PostgresSettings are PostgreSQL's -c settings (name=value), e.g.
	// max_connections=37.
	PostgresSettings []string
}

// PgBouncer is a PostgreSQL with a database app owned by the role app,
// PgBouncer in transaction pooling in front of it, and
// prometheus-pgbouncer-exporter 2.x reading PgBouncer's admin console, all
// on loopback for the test's life.
type PgBouncer struct {
	// Postgres is PostgreSQL's host:port; Root a connection to it as the
	// superuser postgres (database postgres).
	Postgres string
	Root     *sql.DB
	// Addr is PgBouncer's host:port; App a connection through it as app to
	// the database app, which already answered, in pgx's exec mode: each
	// statement one extended-protocol exchange with the unnamed statement,
	// which transaction pooling allows (no prepared statement outlives a
	// transaction).
	Addr string
	App  *sql.DB
	// Exporter is prometheus-pgbouncer-exporter's host:port (its metrics at
	// /metrics). It has read PgBouncer once: Prometheus's first scrape
	// reads pgbouncer_up 1.
	Exporter string
}

// StartPgBouncer starts PostgreSQL, PgBouncer and the PgBouncer exporter for
// the test, stopped by its cleanup. As root PostgreSQL and PgBouncer, which
// refuse root, run as the postgres user. Without Debian's postgresql or
// pgbouncer, or without Python or PyPI for the exporter, it skips, and
// fails under CI=true.
func StartPgBouncer(t testing.TB, opts PgBouncerOptions) PgBouncer {
	t.Helper()
	// Every binary first: a machine without one skips before anything starts.
	bouncer := Binary(t, "pgbouncer", "pgbouncer")
	pgBin := postgresBin(t)
	exporter := pgbouncerExporter(t)

	var p PgBouncer
	p.Postgres, p.Root = startPostgres(t, pgBin, opts.PostgresSettings)
	for _, q := range []string{"CREATE ROLE app LOGIN", "CREATE DATABASE app OWNER app"} {
		if _, err := p.Root.Exec(q); err != nil {
			t.Fatalf("PostgreSQL: %s: %v", q, err)
		}
	}
	p.Addr = startBouncer(t, bouncer, p.Postgres, opts)
	app, err := sql.Open("pgx", "postgres://app@"+p.Addr+"/app?sslmode=disable&default_query_exec_mode=exec")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	// The app's pool (app, app) exists in PgBouncer from its first client on.
	WaitFor(t, "PgBouncer", 30*time.Second, app.Ping)
	p.App = app

	p.Exporter = freeport.Addr(t)
	host, port, _ := strings.Cut(p.Exporter, ":")
	conf := filepath.Join(t.TempDir(), "exporter.yaml")
	writeFile(t, conf, fmt.Sprintf("exporter_host: %s\nexporter_port: %s\npgbouncers:\n  - dsn: postgresql://postgres@%s/pgbouncer\n", host, port, p.Addr))
	// No --log-file stdout: 2.1.2 compares the argument with "is not", so a
	// "stdout" from the command line is a file of that name; its default
	// logs to stderr.
	Start(t, exporter, "--config", conf)
	WaitFor(t, "prometheus-pgbouncer-exporter", 30*time.Second, func() error {
		resp, err := HTTPGet("http://" + p.Exporter + "/metrics")
		if err != nil {
			return err
		}
		if !strings.Contains(resp, "\npgbouncer_up 1") {
			return errors.New("pgbouncer_up is not 1 yet")
		}
		return nil
	})
	return p
}

// postgresBin is the newest PostgreSQL server's bin directory as Debian
// installs it (/usr/lib/postgresql/15/bin).
func postgresBin(t testing.TB) string {
	t.Helper()
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[i]))))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(dirs[j]))))
		return vi < vj
	})
	if len(dirs) == 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("no PostgreSQL server (/usr/lib/postgresql/*/bin/initdb) in CI: scripts/test-deps.sh installs Debian's postgresql")
		}
		t.Skip("SKIPPED: no PostgreSQL server (/usr/lib/postgresql/*/bin/initdb; apt-get install postgresql); the test against the real server did not run")
	}
	return filepath.Dir(dirs[len(dirs)-1])
}

// asPostgres is the prefix that runs a server as the postgres user when
// the test runs as root, after giving it the files; none otherwise.
func asPostgres(t testing.TB, files ...string) []string {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil
	}
	u, err := osuser.Lookup("postgres")
	if err != nil {
		t.Fatalf("as root the test runs PostgreSQL and PgBouncer as the postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	for _, f := range files {
		if err := os.Chown(f, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	return []string{Binary(t, "setpriv", "util-linux"), "--reuid=postgres", "--regid=postgres", "--init-groups"}
}

// tempDir is a directory the postgres user may own: t.TempDir's parent is
// the test's user's alone.
func tempDir(t testing.TB, prefix string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// startPostgres runs a cluster of the test's (trust authentication, no
// fsync) and returns its address and a connection as postgres.
func startPostgres(t testing.TB, bin string, settings []string) (string, *sql.DB) {
	t.Helper()
	dir := tempDir(t, "softalloc-pg")
	as := asPostgres(t, dir)
	data := filepath.Join(dir, "data")
	initdb := append(append([]string{}, as...), filepath.Join(bin, "initdb"), "-D", data, "--auth=trust", "-U", "postgres", "--no-sync")
	if out, err := exec.Command(initdb[0], initdb[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v: %s", err, out)
	}
	addr := freeport.Addr(t)
	args := append(append([]string{}, as...), filepath.Join(bin, "postgres"), "-D", data, "-c", "listen_addresses=127.0.0.1",
		"-c", "port="+addr[strings.LastIndexByte(addr, ':')+1:], "-c", "unix_socket_directories="+dir, "-c", "fsync=off")
	for _, s := range settings {
		args = append(args, "-c", s)
	}
	Start(t, args[0], args[1:]...)
	root, err := sql.Open("pgx", "postgres://postgres@"+addr+"/postgres?sslmode=disable")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Close() })
	WaitFor(t, "PostgreSQL", 60*time.Second, root.Ping)
	return addr, root
}

// startBouncer runs PgBouncer in transaction pooling in front of the
// database app at pgAddr; postgres is its admin and stats user, every user
// trusted.
func startBouncer(t testing.TB, bin, pgAddr string, opts PgBouncerOptions) string {
	t.Helper()
	dir := tempDir(t, "softalloc-pgbouncer")
	addr := freeport.Addr(t)
	host, port, _ := strings.Cut(pgAddr, ":")
	ini := fmt.Sprintf(`[databases]
app = host=%s port=%s dbname=app

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %s
unix_socket_dir = %s
auth_type = trust
auth_file = %s/userlist.txt
admin_users = postgres
stats_users = postgres
pool_mode = transaction
server_reset_query =
ignore_startup_parameters = extra_float_digits
`, host, port, addr[strings.LastIndexByte(addr, ':')+1:], dir, dir)
	for _, s := range []struct {
		name string
		v    int
	}{{"default_pool_size", opts.PoolSize}, {"reserve_pool_size", opts.ReservePoolSize}, {"max_client_conn", opts.MaxClientConn}} {
		if s.v != 0 {
			ini += fmt.Sprintf("%s = %d\n", s.name, s.v)
		}
	}
	if opts.ReservePoolTimeout != 0 {
		ini += fmt.Sprintf("reserve_pool_timeout = %g\n", opts.ReservePoolTimeout.Seconds())
	}
	conf, users := filepath.Join(dir, "pgbouncer.ini"), filepath.Join(dir, "userlist.txt")
	writeFile(t, conf, ini)
	writeFile(t, users, "\"app\" \"\"\n\"postgres\" \"\"\n")
	args := append(append([]string{}, asPostgres(t, dir, conf, users)...), bin, conf)
	Start(t, args[0], args[1:]...)
	return addr
}

// pgbouncerExporter installs the pinned prometheus-pgbouncer-exporter
// (examples/pgbouncer-exporter/install-pgbouncer-exporter.sh) and returns
// its executable.
func pgbouncerExporter(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(file), "..", "..", "examples", "pgbouncer-exporter", "install-pgbouncer-exporter.sh")
	out, err := exec.Command(script).Output()
	if err != nil {
		msg := fmt.Sprintf("cannot install prometheus-pgbouncer-exporter (examples/pgbouncer-exporter/install-pgbouncer-exporter.sh): %v", err)
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			msg += ": " + strings.TrimSpace(string(ee.Stderr))
		}
		if os.Getenv("CI") != "" {
			t.Fatal(msg + "; in CI the PgBouncer tests must run")
		}
		t.Skip("SKIPPED: " + msg)
	}
	return strings.TrimSpace(string(out))
}

func writeFile(t testing.TB, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
