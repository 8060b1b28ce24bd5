package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// --format takes php-fpm, and its help and its error say so.
func TestFormatFlagNamesPHPFPM(t *testing.T) {
	for _, cmd := range []string{"recommend", "advise"} {
		out, _, code := run(t, "", cmd, "--help")
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "mysql, php-fpm (comma-separated) or", cmd)
	}
	_, stderr, code := run(t, "", "recommend", "-t", "1/2/1/2", "--format", "nginx", "--no-journal")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `"nginx" is not one of apache, tomcat, hikari, mysql, php-fpm or all`)
}
