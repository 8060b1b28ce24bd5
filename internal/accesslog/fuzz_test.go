package accesslog

import (
	"bytes"
	"strings"
	"testing"

	"github.com/softalloc/softalloc/internal/runner/live"
)

// FuzzParse feeds arbitrary logs through the reader and the inference: no
// panic, every line read is counted once, and a workload inferred from
// anything parses as the load generator reads it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`10.0.0.1 - - [27/Nov/2026:08:55:23.125 +0000] "GET /a/12/b?x=1&y=z HTTP/1.1" 200 5 "-" "ua" 1500`,
		`h - - [27/Nov/2026:08:55:23 +0000] "GET /p/hello-world-again/ HTTP/1.1" 200 5 "-" "a \"b\"" 0.125 -` + "\n" +
			`h - - [27/Nov/2026:08:55:24 +0000] "GET /logo.gif HTTP/1.1" 200 5 "-" "a \"b\"" 0.001`,
		`h - - [2026-11-27T08:55:23+00:00] "GET /{x}|y?q={a|b} HTTP/1.1" 500 - "-" "-"`,
		"h - - [27/Nov/2026:08:55:23 +0000] \"GET / HTTP/1.1\" 200 5\r\n\r\ngarbage\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b), UnitAuto)
		in := NewInferrer(Options{Sample: 5, MaxQueryWords: 2, MaxPathWords: 2})
		good := int64(0)
		for {
			e, ok := r.Next()
			if !ok {
				break
			}
			good++
			in.Add(e)
		}
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
		if good+r.Bad+r.Blank != r.Lines || r.Lines > int64(bytes.Count(b, []byte("\n"))+1) {
			t.Fatalf("%d lines read: %d good, %d bad, %d blank", r.Lines, good, r.Bad, r.Blank)
		}
		res, err := in.Finish("fuzz")
		if err != nil {
			if err == ErrNoPages || strings.Contains(err.Error(), "more than a workload holds") {
				return
			}
			t.Fatal(err)
		}
		if _, err := live.ParseWorkload(res.YAML); err != nil {
			t.Fatalf("%v\n%s", err, res.YAML)
		}
	})
}
