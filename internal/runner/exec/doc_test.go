package exec

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/algorithms"
)

var docDir = filepath.Join("..", "..", "..", "docs")

// paperExperiment is the experiment of the doc's examples: the paper's
// 1/2/1/2 testbed at 400-150-60, 6000 users, the paper's trial timing.
func paperExperiment() algorithms.Experiment {
	e := testExperiment()
	e.Deployment.Topology = "1/2/1/2"
	e.Deployment.Tiers = []algorithms.Tier{e.Deployment.Tiers[0], e.Deployment.Tiers[1],
		{Name: "cluster", Role: algorithms.RoleCluster, Replicas: 1, Cores: 1}, e.Deployment.Tiers[2]}
	e.Timing = algorithms.PaperTiming
	return e
}

// docExamples returns the JSON blocks of docs/exec-protocol.md that follow
// an "<!-- example: NAME -->" marker.
func docExamples(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(docDir, "exec-protocol.md"))
	require.NoError(t, err)
	re := regexp.MustCompile("(?s)<!-- example: ([a-z-]+) -->\\s*```json\n(.*?)```")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(doc), -1) {
		out[m[1]] = m[2]
	}
	return out
}

// The doc's experiment is exactly what the runner writes for it.
func TestDocExperimentExample(t *testing.T) {
	ex := docExamples(t)
	require.Contains(t, ex, "experiment")
	req, err := NewRequest(paperExperiment())
	require.NoError(t, err)
	assert.JSONEq(t, string(marshal(t, req)), ex["experiment"], "update the example in docs/exec-protocol.md")
}

// The doc's observation passes the runner's validation, and the broken
// one fails with the message the doc shows.
func TestDocObservationExamples(t *testing.T) {
	ex := docExamples(t)
	require.Contains(t, ex, "observation")
	o, err := ParseObservation([]byte(ex["observation"]), paperExperiment())
	require.NoError(t, err)
	assert.Len(t, o.Servers, 6)
	assert.InDelta(t, o.Throughput, float64(o.ResponseTimes.Count())/o.RuntimeSeconds, 1e-9, "the example is consistent")

	require.Contains(t, ex, "invalid-observation")
	_, err = ParseObservation([]byte(ex["invalid-observation"]), paperExperiment())
	require.Error(t, err)
	doc, rerr := os.ReadFile(filepath.Join(docDir, "exec-protocol.md"))
	require.NoError(t, rerr)
	assert.Contains(t, string(doc), "\n    "+err.Error()+"\n", "the doc quotes the error the invalid example gets")
}

func TestSchemaMatchesGo(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(docDir, "exec-protocol.schema.json"))
	require.NoError(t, err)
	var schema map[string]any
	require.NoError(t, json.Unmarshal(b, &schema))
	assert.Equal(t, "https://json-schema.org/draft/2020-12/schema", schema["$schema"])
	defs := schema["$defs"].(map[string]any)

	// The observation: the same fields, the same required ones, at every level.
	var compare func(path string, s map[string]any, sh *shape)
	compare = func(path string, s map[string]any, sh *shape) {
		s = resolveRef(t, defs, s)
		switch sh.kind {
		case kindObject:
			props, _ := s["properties"].(map[string]any)
			var want, wantReq, got, gotReq []string
			for _, f := range sh.fields {
				want = append(want, f.name)
				if f.required {
					wantReq = append(wantReq, f.name)
				}
				if p, ok := props[f.name].(map[string]any); ok {
					compare(path+"."+f.name, p, f.shape)
				}
			}
			for k := range props {
				got = append(got, k)
			}
			for _, r := range s["required"].([]any) {
				gotReq = append(gotReq, r.(string))
			}
			sort.Strings(want)
			sort.Strings(got)
			sort.Strings(wantReq)
			sort.Strings(gotReq)
			assert.Equal(t, want, got, "%s: properties", path)
			assert.Equal(t, wantReq, gotReq, "%s: required", path)
			assert.Equal(t, false, s["additionalProperties"], "%s: unknown fields are errors", path)
		case kindArray:
			assert.Contains(t, []any{"array", []any{"array", "null"}}, s["type"], path)
			compare(path+"[]", s["items"].(map[string]any), sh.elem)
		case kindMap:
			assert.Contains(t, []any{"object", []any{"object", "null"}}, s["type"], path)
			compare(path+".*", s["additionalProperties"].(map[string]any), sh.elem)
		case kindNumber:
			assert.Equal(t, "number", s["type"], path)
		case kindInteger:
			if _, isConst := s["const"]; !isConst {
				assert.Equal(t, "integer", s["type"], path)
			}
		case kindString:
			assert.Equal(t, "string", s["type"], path)
		case kindBool:
			assert.Equal(t, "boolean", s["type"], path)
		}
	}
	compare("observation", defs["observation"].(map[string]any), observationShape)

	// The experiment: every field the runner writes is described and
	// required, and the schema describes nothing the runner does not write.
	req, err := NewRequest(paperExperiment())
	require.NoError(t, err)
	var msg any
	require.NoError(t, json.Unmarshal(marshal(t, req), &msg))
	var walk func(path string, s map[string]any, v any)
	walk = func(path string, s map[string]any, v any) {
		s = resolveRef(t, defs, s)
		switch v := v.(type) {
		case map[string]any:
			props, ok := s["properties"].(map[string]any)
			if !ok { // a map keyed by name
				for k, e := range v {
					walk(path+"."+k, s["additionalProperties"].(map[string]any), e)
				}
				return
			}
			for k, e := range v {
				p, ok := props[k].(map[string]any)
				if assert.True(t, ok, "%s.%s: not in the schema", path, k) {
					walk(path+"."+k, p, e)
				}
			}
			if path != "experiment.tiers[].pools" && !strings.HasPrefix(path, "experiment.allocation.") {
				var got []string
				for _, r := range s["required"].([]any) {
					got = append(got, r.(string))
				}
				assert.ElementsMatch(t, keys(v), got, "%s: required", path)
			}
		case []any:
			for _, e := range v {
				walk(path+"[]", s["items"].(map[string]any), e)
			}
		}
	}
	walk("experiment", defs["experiment"].(map[string]any), msg)
}

func resolveRef(t *testing.T, defs map[string]any, s map[string]any) map[string]any {
	t.Helper()
	if ref, ok := s["$ref"].(string); ok {
		def, ok := defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		require.True(t, ok, "ref %s", ref)
		return def
	}
	return s
}

func keys(m map[string]any) []string {
	var k []string
	for n := range m {
		k = append(k, n)
	}
	return k
}
