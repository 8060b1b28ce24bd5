package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// --ramp measures windows to a precision and draws no staircase: with
// --fixed, --report or --range it is refused before any trial.
func TestRampFlagConflicts(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"find-critical", "-t", "1/2/1/2", "--ramp", "--fixed"}, "softalloc: --ramp with --fixed: a ramp measures each window to a precision; give --precision or leave out --fixed\n"},
		{[]string{"find-critical", "-t", "1/2/1/2", "--ramp", "--report", "x.html"}, `softalloc: --report "x.html" with --ramp: the HTML report draws a staircase's trials; leave out one` + "\n"},
		{[]string{"recommend", "-t", "1/2/1/2", "--ramp", "--range"}, "softalloc: --ramp with --report or --range: those draw and extend a staircase's trials; leave out one\n"},
	} {
		stdout, stderr, code := run(t, "", append(tc.args, "--no-journal")...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Equal(t, tc.want, stderr)
		assert.Empty(t, stdout)
	}
}
