package cli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// --format takes php-fpm, and its help and its error say so.
func TestFormatFlagNamesPHPFPM(t *testing.T) {
	for _, cmd := range []string{"recommend", "advise"} {
		out, _, code := run(t, "", cmd, "--help")
		assert.Equal(t, 0, code)
		// Help wraps its lines: compare the words.
		assert.Contains(t, strings.Join(strings.Fields(out), " "), "apache, tomcat, hikari, mysql, php-fpm", cmd)
	}
	_, stderr, code := run(t, "", "recommend", "-t", "1/2/1/2", "--format", "nginx", "--no-journal")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `"nginx" is not one of apache, tomcat, hikari, mysql, php-fpm`)
	assert.Contains(t, stderr, ` or all`)
}

// recommend --child-rss and validate's memory flags take sizes with units;
// a bad size and a deployment without children are usage errors.
func TestChildRSSFlags(t *testing.T) {
	out, _, code := run(t, "", "recommend", "--help")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "--child-rss size")
	runUsageCases(t, []usageCase{
		{"no children", []string{"recommend", "-t", "1/2/1/2", "--child-rss", "48MiB"},
			`--child-rss 48MiB: deployment "1/2/1/2" has no tier of children (pools: {children: N}) whose memory it sizes`},
		{"nojournal bad size", []string{"recommend", "-f", phpDeployment, "--child-rss", "48XB"},
			`--child-rss: want a memory size above 0 and at most 1PiB, such as 48MiB, 43008KiB or 1.5GiB (a bare number is MiB), got "48XB"`},
		{"nojournal validate's", []string{"validate", "-f", phpDeployment, "--memory-limit", "1GiB", "--child-rss", "-1"},
			`--child-rss: want a memory size above 0 and at most 1PiB, such as 48MiB, 43008KiB or 1.5GiB (a bare number is MiB), got "-1"`},
		{"validate's units", []string{"validate", "-f", phpDeployment, "--memory-limit", "1GiB", "--child-rss", "2GiB", "--runner", "exec", "--runner-cmd", "/bin/false"},
			`--memory-limit 1024MiB / --child-rss 2048MiB = 0 children: want 1 to 100000`},
	})
}
