package hooks

import (
	"os"
	"os/exec"
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

// startMariaDB initialises a data directory and runs mariadbd on a free
// loopback port; it returns the socket.
func startMariaDB(t *testing.T) string {
	t.Helper()
	install := testserver.Binary(t, "mariadb-install-db", "mariadb-server")
	mariadbd := testserver.Binary(t, "mariadbd", "mariadb-server")
	testserver.Binary(t, "mariadb", "mariadb-client-core")
	dir := shortTempDir(t)
	data, sock := filepath.Join(dir, "data"), filepath.Join(dir, "sock")
	out, err := exec.Command(install, "--no-defaults", "--datadir="+data, "--user=root",
		"--auth-root-authentication-method=normal", "--skip-test-db").CombinedOutput()
	require.NoError(t, err, "mariadb-install-db: %s", out)
	testserver.Start(t, mariadbd, "--no-defaults", "--datadir="+data, "--user=root", "--bind-address=127.0.0.1",
		"--port="+strconv.Itoa(freeport.Port(t)), "--socket="+sock, "--pid-file="+filepath.Join(dir, "pid"),
		"--log-error="+filepath.Join(dir, "err.log"), "--skip-name-resolve", "--skip-log-bin",
		"--innodb-buffer-pool-size=16M", "--max-connections=151")
	testserver.WaitFor(t, "MariaDB", 60*time.Second, func() error { _, err := mariadbQuery(sock, "SELECT 1"); return err })
	return sock
}

// mariadbQuery asks the server itself, not through the hook.
func mariadbQuery(sock, q string) (string, error) {
	out, err := exec.Command("mariadb", "--no-defaults", "-N", "-B", "-uroot", "--socket="+sock, "-e", q).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// The MariaDB hook sets max_connections with SET GLOBAL, persists it when
// asked, and puts the old value back when the server clamps the new one.
func TestMariaDBHook(t *testing.T) {
	t.Parallel()
	sock := startMariaDB(t)
	maxConns := func() string {
		v, err := mariadbQuery(sock, "SELECT @@GLOBAL.max_connections")
		require.NoError(t, err, v)
		return v
	}
	persist := filepath.Join(shortTempDir(t), "99-softalloc.cnf")
	env := []string{"MYSQL_SOCKET=" + sock}

	r := runHook(t, env, "mariadb.sh", "--persist", persist, "40")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "mariadb: max_connections 151 -> 40 (SET GLOBAL, read back)\n"+
		"mariadb: "+persist+" max_connections none -> 40 (read at the next start)\n", r.stdout)
	assert.Equal(t, "40", maxConns())
	conf, err := os.ReadFile(persist)
	require.NoError(t, err)
	assert.Contains(t, string(conf), "[mysqld]\nmax_connections = 40\n")

	r = runHook(t, env, "mariadb.sh", "40")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "mariadb: max_connections 40 (unchanged)\n", r.stdout)

	// MariaDB's least is 10: it would take 5 as 10, with a warning.
	r = runHook(t, env, "mariadb.sh", "--persist", persist, "5")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "set max_connections = 10, not 5")
	assert.Equal(t, "40", maxConns(), "the old value is back")
	conf, err = os.ReadFile(persist)
	require.NoError(t, err)
	assert.Contains(t, string(conf), "max_connections = 40\n", "the persisted file is untouched")

	r = runHook(t, env, "mariadb.sh", "many")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "max_connections 'many': want a positive integer")
	assert.Equal(t, "40", maxConns())
}
