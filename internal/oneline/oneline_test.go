package oneline

import (
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
