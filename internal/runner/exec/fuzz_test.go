package exec

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/fuzzcheck"
	"github.com/softalloc/softalloc/internal/wire"
)

// FuzzParseObservation feeds arbitrary stdout to the parser of a program's
// observation. What parses must validate, list testExperiment's servers in
// chain order, and read back the same once written as a Response; what does
// not must say why on one line, since the runner logs it as one.
func FuzzParseObservation(f *testing.F) {
	valid, err := json.Marshal(Response{ProtocolVersion: ProtocolVersion, Observation: wire.FromObservation(testObservation())})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	f.Add(append([]byte("\n  "), append(valid, '\n')...))
	// The doc's examples are of a 1/2/1/2 experiment: against testExperiment
	// they fail on the servers, which still exercises everything before.
	if doc, err := os.ReadFile(filepath.Join(docDir, "exec-protocol.md")); err == nil {
		for _, name := range []string{"observation", "invalid-observation"} {
			start := bytes.Index(doc, []byte("<!-- example: "+name+" -->"))
			if start < 0 {
				continue
			}
			rest := doc[start:]
			if i := bytes.Index(rest, []byte("```json\n")); i >= 0 {
				rest = rest[i+len("```json\n"):]
				if j := bytes.Index(rest, []byte("```")); j >= 0 {
					f.Add(rest[:j])
				}
			}
		}
	}
	for _, s := range []string{"", " \n", "{}", "null", "[1, 2]", `{"a": 1} {"b": 2}`, `{"protocolVersion": 1}`,
		`{"protocolVersion": 2, "runtimeSeconds": 1}`, `{"protocolVersion": 1e400}`, `{"protocolVersion": 1.0}`,
		`{"servers": [{"resources": {"a\nb": 2}}]}`, `{"servers": [{"name": "x\ny"}]}`, `{"x\ny": 1}`,
		`{"protocolVersion":1,"runtimeSeconds":1,"throughput":0,"responseTimes":{"buckets":[],"sum":0},"servers":[]}`,
		`{"protocolVersion":1,"runtimeSeconds":1,"throughput":0,"responseTimes":{"buckets":null,"sum":0},"servers":null}`,
		string(valid[:len(valid)/2]), strings.Repeat("[", 10000)} {
		f.Add([]byte(s))
	}
	e := testExperiment()
	f.Fuzz(func(t *testing.T, stdout []byte) {
		o, err := ParseObservation(stdout, e)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.NoError(t, o.Validate())
		var names []string
		for _, s := range o.Servers {
			names = append(names, s.Name)
		}
		require.Equal(t, []string{"web-1", "app-1", "app-2", "db-1", "db-2"}, names, "servers in chain order")

		b, err := json.Marshal(Response{ProtocolVersion: ProtocolVersion, Observation: wire.FromObservation(o)})
		require.NoError(t, err)
		o2, err := ParseObservation(b, e)
		require.NoError(t, err, "the parsed observation, written back: %s", b)
		b2, err := json.Marshal(Response{ProtocolVersion: ProtocolVersion, Observation: wire.FromObservation(o2)})
		require.NoError(t, err)
		require.Equal(t, string(b), string(b2), "round trip")
	})
}

// FuzzParseWindow feeds arbitrary lines to the parser of a ramp's window
// (protocol version 2). What parses must validate, be at the level asked
// for with its edges a window of its runtime, and read back the same once
// written; what does not must say why on one line.
func FuzzParseWindow(f *testing.F) {
	pos := &RampWindow{Users: 6000, StartSeconds: 20, EndSeconds: 30}
	valid, err := json.Marshal(Response{ProtocolVersion: RampProtocolVersion, Observation: wire.FromObservation(testObservation()), Ramp: pos})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(valid)
	trial, err := json.Marshal(Response{ProtocolVersion: RampProtocolVersion, Observation: wire.FromObservation(testObservation())})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(trial)
	for _, s := range []string{"", "{}", `{"protocolVersion": 2, "ramp": {}}`, `{"protocolVersion": 2, "ramp": {"users": 6000, "startSeconds": 1, "endSeconds": 0}}`,
		`{"ramp": {"users": -1, "startSeconds": 1e400, "endSeconds": "x"}}`, `{"ramp": null}`, string(valid[:len(valid)/2])} {
		f.Add([]byte(s))
	}
	e := testExperiment()
	f.Fuzz(func(t *testing.T, line []byte) {
		o, w, err := ParseWindow(line, e)
		if err != nil {
			fuzzcheck.RequireOneLine(t, err)
			return
		}
		require.NoError(t, o.Validate())
		require.Equal(t, e.Workload.Users, w.Users)
		require.Greater(t, w.EndSeconds, w.StartSeconds)
		b, err := json.Marshal(Response{ProtocolVersion: RampProtocolVersion, Observation: wire.FromObservation(o), Ramp: &w})
		require.NoError(t, err)
		o2, w2, err := ParseWindow(b, e)
		require.NoError(t, err, "the parsed window, written back: %s", b)
		require.Equal(t, w, w2)
		b2, err := json.Marshal(Response{ProtocolVersion: RampProtocolVersion, Observation: wire.FromObservation(o2), Ramp: &w2})
		require.NoError(t, err)
		require.Equal(t, string(b), string(b2), "round trip")
	})
}
