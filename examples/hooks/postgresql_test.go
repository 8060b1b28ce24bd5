package hooks

import (
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/softalloc/softalloc/internal/freeport"
	"github.com/softalloc/softalloc/internal/testserver"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const pgBin = "/usr/lib/postgresql/15/bin"

// pgServer is a PostgreSQL 15 cluster of the test's, run by the postgres
// user (PostgreSQL refuses root) with trust authentication on loopback.
type pgServer struct {
	dir, data string
	port      int
	asUser    []string // the command prefix that runs a program as its owner
}

func startPostgreSQL(t *testing.T) pgServer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "initdb")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s/initdb is not installed in CI: scripts/test-deps.sh installs Debian's postgresql", pgBin)
		}
		t.Skipf("SKIPPED: PostgreSQL 15 is not installed (%s/initdb: apt-get install postgresql, or scripts/test-deps.sh)", pgBin)
	}
	testserver.Binary(t, "psql", "postgresql-client")
	s := pgServer{dir: shortTempDir(t), port: freeport.Port(t)}
	s.data = filepath.Join(s.dir, "data")
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		require.NoError(t, err, "as root the test runs PostgreSQL as the postgres user")
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		require.NoError(t, os.Chown(s.dir, uid, gid))
		s.asUser = []string{testserver.Binary(t, "runuser", "util-linux"), "-u", "postgres", "--"}
	}
	s.run(t, filepath.Join(pgBin, "initdb"), "-D", s.data, "--auth=trust", "-U", "postgres", "--no-sync")
	s.run(t, filepath.Join(pgBin, "pg_ctl"), "-D", s.data, "-l", filepath.Join(s.dir, "pg.log"), "-w", "-t", "60",
		"-o", fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=20 -c shared_buffers=8MB -c fsync=off", s.port, s.dir), "start")
	t.Cleanup(func() {
		cmd := exec.Command(s.asUser[0], append(s.asUser[1:], filepath.Join(pgBin, "pg_ctl"), "-D", s.data, "-m", "immediate", "-w", "stop")...)
		if s.asUser == nil {
			cmd = exec.Command(filepath.Join(pgBin, "pg_ctl"), "-D", s.data, "-m", "immediate", "-w", "stop")
		}
		_ = cmd.Run()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(s.dir, "pg.log"))
			t.Logf("PostgreSQL's log:\n%s", log)
		}
	})
	return s
}

func (s pgServer) run(t *testing.T, name string, args ...string) {
	t.Helper()
	argv := append(append(append([]string{}, s.asUser...), name), args...)
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	require.NoError(t, err, "%s: %s", strings.Join(argv, " "), out)
}

func (s pgServer) env() []string {
	return []string{"PGHOST=127.0.0.1", "PGPORT=" + strconv.Itoa(s.port), "PGUSER=postgres", "PGDATABASE=postgres",
		"PG_CTL=" + filepath.Join(pgBin, "pg_ctl"), "PG_OS_USER=postgres"}
}

// query asks the server itself.
func (s pgServer) query(q string) (string, error) {
	out, err := exec.Command("psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", "postgres", "-d", "postgres", "-c", q).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// The PostgreSQL hook refuses a change that needs a restart unless told to
// restart; with --restart it ALTERs SYSTEM and restarts, reading the value
// back, and a value PostgreSQL refuses or does not take leaves the server as
// it was. One cluster for all: initdb is the test's longest step.
func TestPostgreSQLHook(t *testing.T) {
	t.Parallel()
	s := startPostgreSQL(t)
	maxConns := func() string {
		v, err := s.query("SHOW max_connections")
		require.NoError(t, err, v)
		return v
	}
	require.Equal(t, "20", maxConns())

	r := runHook(t, s.env(), "postgresql.sh", "30")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "max_connections 20 -> 30 needs a restart")
	assert.Contains(t, r.stderr, "--restart")
	assert.Empty(t, r.stdout)
	assert.Equal(t, "20", maxConns())

	// The command line's -c wins over ALTER SYSTEM: the hook sees that the
	// restarted server kept 20, and puts postgresql.auto.conf back.
	auto, err := os.ReadFile(filepath.Join(s.data, "postgresql.auto.conf"))
	require.NoError(t, err)
	r = runHook(t, append(s.env(), "PGDATA="+s.data), "postgresql.sh", "--restart", "30")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "restarted with max_connections = 20, not 30")
	after, err := os.ReadFile(filepath.Join(s.data, "postgresql.auto.conf"))
	require.NoError(t, err)
	assert.Equal(t, string(auto), string(after))
	testserver.WaitFor(t, "PostgreSQL back", 30*time.Second, func() error { _, err := s.query("SELECT 1"); return err })
	assert.Equal(t, "20", maxConns())

	r = runHook(t, append(s.env(), "PGDATA="+s.data), "postgresql.sh", "--restart", "999999")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "PostgreSQL refuses max_connections = 999999 (kept at 20)")
	assert.Equal(t, "20", maxConns())

	r = runHook(t, s.env(), "postgresql.sh", "20")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "postgresql: max_connections 20 (unchanged)\n", r.stdout)

	// A restart that takes the new value. The server got max_connections
	// on its command line, which postmaster.opts repeats at each restart:
	// it goes to postgresql.auto.conf instead, with one restart, as a
	// cluster set up by its configuration files would have it.
	opts := filepath.Join(s.data, "postmaster.opts")
	b, err := os.ReadFile(opts)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(opts, []byte(strings.Replace(string(b), `"-c" "max_connections=20" `, "", 1)), 0o644))
	_, err = s.query("ALTER SYSTEM SET max_connections = 25")
	require.NoError(t, err)
	s.run(t, filepath.Join(pgBin, "pg_ctl"), "-D", s.data, "-l", filepath.Join(s.dir, "pg.log"), "-m", "fast", "-w", "restart")
	v, err := s.query("SHOW max_connections")
	require.NoError(t, err, v)
	require.Equal(t, "25", v)

	r = runHook(t, append(s.env(), "PGDATA="+s.data), "postgresql.sh", "--restart", "40")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "postgresql: max_connections 25 -> 40 (ALTER SYSTEM, restarted, read back)\n", r.stdout)
	v, err = s.query("SHOW max_connections")
	require.NoError(t, err, v)
	assert.Equal(t, "40", v)
}
