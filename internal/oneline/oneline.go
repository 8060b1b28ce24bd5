// Package oneline keeps error messages built from user input on one line:
// the CLI prints an error as a single line on stderr, and a name or a YAML
// key read from a file may hold a newline.
package oneline

import (
	"errors"
	"strconv"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"
)

// Escape writes control characters as Go escapes (\n, \x00).
func Escape(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// YAMLError makes a decoding error one line: yaml.v3 puts each type error
// on a line of its own and leaves a quoted key's newline in "field a\nb not
// found".
func YAMLError(err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs = te.Errors
	}
	for i, m := range msgs {
		msgs[i] = Escape(m)
	}
	return errors.New(strings.Join(msgs, "; "))
}
