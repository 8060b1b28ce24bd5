package jsonl_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/jsonl"
)

func TestRead(t *testing.T) {
	lines, tail, err := jsonl.Read(strings.NewReader("{\"a\":1}\r\n\n{\"b\":2}\n{\"c\":"), 100)
	require.NoError(t, err)
	require.Len(t, lines, 3)
	assert.Equal(t, `{"a":1}`, string(lines[0]), "CR dropped")
	assert.Equal(t, "", string(lines[1]))
	assert.Equal(t, `{"c":`, string(tail))

	_, tail, err = jsonl.Read(strings.NewReader("{\"a\":1}\n"), 100)
	require.NoError(t, err)
	assert.Nil(t, tail)

	_, _, err = jsonl.Read(strings.NewReader("{\"a\":1}\n"+strings.Repeat("x", 200)+"\n"), 100)
	require.ErrorIs(t, err, jsonl.ErrLineTooLong)
	assert.Contains(t, err.Error(), "line 2:")
	// An endless line is refused at the bound, not read whole.
	_, _, err = jsonl.Read(strings.NewReader(strings.Repeat("\x00", 1<<20)), 1000)
	require.ErrorIs(t, err, jsonl.ErrLineTooLong)
}

func TestTorn(t *testing.T) {
	for tail, torn := range map[string]bool{
		`{"key":"abc","runner":"si`: true,
		`{"key":`:                   true,
		`{`:                         true,
		`{"a":1}`:                   false, // whole: only its newline is missing
		"hello, appended by hand":   false,
		`{garbage`:                  false,
		"":                          false,
	} {
		assert.Equal(t, torn, jsonl.Torn([]byte(tail)), tail)
	}
}
