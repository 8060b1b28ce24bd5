package hooks

import (
	"fmt"
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

// The PgBouncer hook SETs default_pool_size and max_client_conn through the
// admin console of a real PgBouncer in front of a real PostgreSQL, reads
// them back with SHOW CONFIG, writes them to pgbouncer.ini so that a RELOAD
// keeps them, and a value PgBouncer refuses leaves the old ones.
func TestPgBouncerHook(t *testing.T) {
	t.Parallel()
	bouncer := testserver.Binary(t, "pgbouncer", "pgbouncer")
	pg := startPostgreSQL(t)
	port := freeport.Port(t)
	ini := filepath.Join(pg.dir, "pgbouncer.ini")
	writeFile(t, ini, fmt.Sprintf(`[databases]
app = host=127.0.0.1 port=%d dbname=postgres user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = any
admin_users = pgbouncer, postgres
pool_mode = transaction
default_pool_size = 5
max_client_conn = 50
logfile = %s/pgbouncer.log
`, pg.port, port, pg.dir))
	args := []string{ini}
	if os.Geteuid() == 0 {
		// PgBouncer refuses root.
		args = []string{"-u", "postgres", ini}
	}
	testserver.Start(t, bouncer, args...)
	console := func(q string) (string, error) {
		out, err := exec.Command("psql", "-X", "-A", "-t", "-F", " ", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-d", "pgbouncer", "-c", q).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	setting := func(key string) string {
		out, err := console("SHOW CONFIG")
		require.NoError(t, err, out)
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
				return f[1]
			}
		}
		t.Fatalf("SHOW CONFIG has no %s: %s", key, out)
		return ""
	}
	testserver.WaitFor(t, "PgBouncer's console", 30*time.Second, func() error { _, err := console("SHOW VERSION"); return err })
	// A client reaches PostgreSQL through it.
	out, err := exec.Command("psql", "-X", "-A", "-t", "-h", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "postgres", "-d", "app", "-c", "SELECT 41 + 1").CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Equal(t, "42", strings.TrimSpace(string(out)))

	env := []string{"PGBOUNCER_PORT=" + strconv.Itoa(port), "PGBOUNCER_USER=postgres"}
	r := runHook(t, env, "pgbouncer.sh", "8", "60")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "pgbouncer: default_pool_size 5 -> 8 (SET, read back)\npgbouncer: max_client_conn 50 -> 60 (SET, read back)\n", r.stdout)
	assert.Equal(t, "8", setting("default_pool_size"))
	assert.Equal(t, "60", setting("max_client_conn"))

	// Without --ini a RELOAD goes back to the file; with it the file agrees.
	r = runHook(t, env, "pgbouncer.sh", "--ini", ini, "12")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "pgbouncer: default_pool_size 8 -> 12 (SET, read back)\npgbouncer: "+ini+" written and RELOADed (default_pool_size = 12)\n", r.stdout)
	_, err = console("RELOAD")
	require.NoError(t, err)
	assert.Equal(t, "12", setting("default_pool_size"))
	assert.Equal(t, "50", setting("max_client_conn"), "the file's, after a RELOAD")
	body, err := os.ReadFile(ini)
	require.NoError(t, err)
	assert.Contains(t, string(body), "\ndefault_pool_size = 12\nmax_client_conn = 50\n")

	// PgBouncer takes a max_client_conn past 32 bits modulo 2^32: the read
	// back sees it, and the pool size SET just before it is put back.
	before := string(body)
	r = runHook(t, env, "pgbouncer.sh", "--ini", ini, "14", "99999999999")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "after SET 99999999999: put back at 50")
	assert.Empty(t, r.stdout)
	assert.Equal(t, "12", setting("default_pool_size"))
	assert.Equal(t, "50", setting("max_client_conn"))
	body, err = os.ReadFile(ini)
	require.NoError(t, err)
	assert.Equal(t, before, string(body))

	r = runHook(t, env, "pgbouncer.sh", "12", "0")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "max_client_conn '0': want a positive integer")
}
