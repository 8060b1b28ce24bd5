// Package schematest gives tests the deployment file's JSON Schema
// (docs/deployment.schema.json) compiled as an editor compiles it, and
// checks YAML documents against it: the parsers' tests in several packages
// (internal/topology, internal/runner/live) ask whether the schema says what
// their parser says.
package schematest

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// Path is docs/deployment.schema.json, found from this file's directory so
// that every package's test reads the one file whatever its own directory.
func Path(t testing.TB) string {
	t.Helper()
	_, self, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("schematest: no source path to find docs/deployment.schema.json from")
	}
	return filepath.Join(filepath.Dir(self), "..", "..", "docs", "deployment.schema.json")
}

// Deployment compiles the deployment file's schema.
func Deployment(t testing.TB) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(Path(t))
	if err != nil {
		t.Fatalf("the deployment schema: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("the deployment schema: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("deployment.schema.json", doc); err != nil {
		t.Fatalf("the deployment schema: %v", err)
	}
	s, err := c.Compile("deployment.schema.json")
	if err != nil {
		t.Fatalf("the deployment schema: %v", err)
	}
	return s
}

// Validate checks a YAML (or JSON) document as an editor would: the YAML's
// values as JSON. A document that is not YAML fails the test; one the
// schema refuses is the error returned.
func Validate(t testing.TB, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("not YAML: %v\n%s", err, data)
	}
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("YAML with no JSON form (a map with non-string keys?): %v\n%s", err, data)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatalf("%v", err)
	}
	return s.Validate(inst)
}
