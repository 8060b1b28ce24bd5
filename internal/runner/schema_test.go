package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The deployment file's schema (docs/deployment.schema.json) has the runner
// section's shared keys (the live runner's are checked in its package) and
// names the registered runners.
func TestSchemaHasTheSharedRunnerKeys(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "deployment.schema.json"))
	require.NoError(t, err)
	var s struct {
		Defs struct {
			Runner struct {
				Properties map[string]struct {
					Enum []string
				}
			}
		} `json:"$defs"`
	}
	require.NoError(t, json.Unmarshal(b, &s))
	props := s.Defs.Runner.Properties
	for _, k := range sectionKeys {
		assert.Contains(t, props, k, "runner.%s: ApplySection reads it; the schema lacks it", k)
	}
	names := props["name"].Enum
	sort.Strings(names)
	assert.Equal(t, Names(), names, "runner.name's enum: the registered runners")
}
