package procattr

import (
	"os"
	"slices"
	"strings"
)

// secrets are variables of softalloc's own secrets: a program it starts has
// no use for them, and may log or pass on its environment.
var secrets = []string{"SOFTALLOC_PUSHGATEWAY_PASSWORD"}

// Environ is softalloc's environment for a program it starts, without its
// secrets.
func Environ() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(secrets, name)
	})
}
