package oneline

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestEscapeKeepsPlainTextAndEscapesControls(t *testing.T) {
	assert.Equal(t, "web-1 ü", Escape("web-1 ü"))
	assert.Equal(t, `a\nb\x00c\td`, Escape("a\nb\x00c\td"))
}

func TestYAMLErrorJoinsTypeErrorsOnOneLine(t *testing.T) {
	var v struct {
		A int `yaml:"a"`
		B int `yaml:"b"`
	}
	err := yaml.Unmarshal([]byte("a: x\nb: y\n"), &v)
	require.Error(t, err)
	require.Contains(t, err.Error(), "\n", "yaml.v3 spreads type errors over lines")
	got := YAMLError(err).Error()
	assert.NotContains(t, got, "\n")
	assert.Contains(t, got, "line 1:")
	assert.Contains(t, got, "; line 2:")
}

type testInner struct {
	Size    int    `yaml:"size"`
	Backlog int    `yaml:"backlog"`
	Policy  string `yaml:"policy,omitempty"`
	Skipped int    `yaml:"-"`
	Plain   bool
	//lint:ignore U1000 an unexported field yaml cannot set, which the list of allowed keys must leave out
	hidden int
}

type testDoc struct {
	Name  string      `yaml:"name"`
	Web   testInner   `yaml:"web"`
	Pools []testInner `yaml:"pools"`
}

func TestDecodeYAMLNamesAnUnknownFieldByItsPlace(t *testing.T) {
	var d testDoc
	err := DecodeYAML([]byte("name: a\nweb:\n  size: 1\n  backlogg: 2\n"), &d)
	require.Error(t, err)
	assert.Equal(t, `line 4: unknown field "backlogg" in web; want one of: size, backlog, policy, plain`, err.Error())

	err = DecodeYAML([]byte("name: a\npools:\n  - {size: 1}\n  - {size: 2, bakclog: 3}\n"), &d)
	require.Error(t, err)
	assert.Equal(t, `line 4: unknown field "bakclog" in pools[1]; want one of: size, backlog, policy, plain`, err.Error())

	err = DecodeYAML([]byte("nmae: a\n"), &d)
	require.Error(t, err)
	assert.Equal(t, `line 1: unknown field "nmae" in the top level; want one of: name, web, pools`, err.Error())
}

func TestDecodeYAMLNamesAWrongValueByItsPath(t *testing.T) {
	var d testDoc
	// On a flow line the bad value picks its key, not the line's first.
	err := DecodeYAML([]byte("web: {size: 1, backlog: many}\n"), &d)
	require.Error(t, err)
	assert.Equal(t, "web.backlog: line 1: want an integer, got `many`", err.Error())

	err = DecodeYAML([]byte("web: [1]\npools: 3\n"), &d)
	require.Error(t, err)
	assert.Equal(t, "web: line 1: want a mapping of size, backlog, policy, plain, got a list; pools: line 2: want a list, got `3`", err.Error())
	assert.NotContains(t, err.Error(), "oneline.", "no Go type names")
}

func TestDecodeYAMLEmptyWrapsEOF(t *testing.T) {
	for _, doc := range []string{"", "# only a comment\n", "\n\n"} {
		var d testDoc
		err := DecodeYAML([]byte(doc), &d)
		assert.ErrorIs(t, err, io.EOF, "%q", doc)
	}
	var d testDoc
	require.NoError(t, DecodeYAML([]byte("name: x\n"), &d))
	assert.Equal(t, "x", d.Name)
}

func TestYAMLErrorDropsGoTypeNames(t *testing.T) {
	var d testDoc
	dec := yaml.NewDecoder(strings.NewReader("web: {sizee: 1}\n"))
	dec.KnownFields(true)
	err := dec.Decode(&d)
	require.ErrorContains(t, err, "oneline.testInner", "yaml.v3 names the Go type")
	assert.Equal(t, `line 1: unknown field "sizee"`, YAMLError(err).Error())
}

func TestQuoteOnlyWhenAPlainNameCannotShowIt(t *testing.T) {
	assert.Equal(t, "1/4/1/4", Quote("1/4/1/4"))
	assert.Equal(t, `"a\nb"`, Quote("a\nb"))
	assert.Equal(t, `""`, Quote(""))
	assert.Equal(t, `"say \"hi\""`, Quote(`say "hi"`))
}
