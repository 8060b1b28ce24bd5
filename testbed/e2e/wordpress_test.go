package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wordpressApt are the Debian packages of the WordPress stack beside the
// servers every stack needs.
const wordpressApt = " wordpress wordpress-theme-twentytwentythree php8.2-fpm php8.2-mysql php8.2-cli"

// TestLiveWordPressStack is the WordPress stack's smoke test: up
// (STACK=wordpress: Debian's WordPress on php-fpm, seeded through its own
// API), one find-critical through the live runner on short trials, every
// preset query of deployment-wordpress.yaml against the running servers;
// TestMain stops the testbed (or gives back the stack that was up).
func TestLiveWordPressStack(t *testing.T) {
	for _, f := range []string{"/usr/share/wordpress/wp-load.php", "/usr/share/wordpress/wp-content/themes/twentytwentythree/theme.json"} {
		if _, err := os.Stat(f); err != nil {
			msg := "WordPress or its default theme is not installed (" + f + "): apt-get install" + wordpressApt
			if os.Getenv("CI") == "true" {
				t.Fatal(msg + "; in CI the end-to-end tests must run")
			}
			t.Skip("SKIPPED: " + msg)
		}
	}
	prepare(t, []string{"php-fpm8.2", "php8.2"}, wordpressApt)
	tb := filepath.Join(repo, "testbed", "testbed.sh")
	up := exec.Command(tb, "up")
	up.Env = append(os.Environ(), "STACK=wordpress")
	run(t, up)

	dir := t.TempDir()
	deployment := filepath.Join("testbed", "deployment-wordpress.yaml")
	journal := filepath.Join(dir, "wordpress.jsonl")

	t.Run("find-critical names a saturated tier", func(t *testing.T) {
		var doc struct {
			Critical critical `json:"critical"`
		}
		out := softalloc(t, "find-critical", "--output", "json", "--quiet", "--runner", "live", "-f", deployment,
			"--journal", journal)
		require.NoError(t, json.Unmarshal(out, &doc), "%s", out)
		c := doc.Critical
		t.Logf("wordpress stack: %+v", c)
		assert.Contains(t, []string{"web", "app", "db"}, c.Tier)
		assert.NotEmpty(t, c.Resource)
		assert.Positive(t, c.SaturationWorkload)
		assert.Positive(t, c.MaxThroughput)

		// The php-fpm pool the phpfpm preset read from the status page is
		// the allocation's children.
		app := lastAppObservation(t, journal)
		require.Len(t, app.Pools, 1)
		assert.Equal(t, "threads", app.Pools[0].Name)
		assert.Positive(t, app.Pools[0].Size, "php-fpm's children through phpfpm_total_processes")
	})

	t.Run("the hook refuses a pool php-fpm cannot run, with one line, and keeps the pool", func(t *testing.T) {
		pools := filepath.Join(testbedDir(), "run", "pools")
		before, err := os.ReadFile(pools)
		require.NoError(t, err)
		msg := fails(t, exec.Command(tb, "apply", "100", "0"))
		assert.Contains(t, msg, "apply 100 0: want positive integers")
		msg = fails(t, exec.Command(tb, "apply", "100", "5000"))
		assert.Contains(t, msg, "php-fpm children 5000: want 1..4096")
		after, err := os.ReadFile(pools)
		require.NoError(t, err)
		assert.Equal(t, string(before), string(after))
		pool, err := os.ReadFile(filepath.Join(testbedDir(), "php", "pool.d", "www.conf"))
		require.NoError(t, err)
		assert.NotContains(t, string(pool), "5000")
	})

	t.Run("every preset query of the wordpress deployment gives a number", func(t *testing.T) {
		// A page every 200 ms, so that the rates and Little's law have
		// requests to divide by.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			c := http.Client{Timeout: 10 * time.Second}
			for ctx.Err() == nil {
				if resp, err := c.Get("http://127.0.0.1:18080/?p=100"); err == nil {
					resp.Body.Close()
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
		checkPresets(t, filepath.Join(repo, deployment))
	})
}
