// Package oneline keeps error messages built from user input on one line:
// the CLI prints an error as a single line on stderr, and a name or a YAML
// key read from a file may hold a newline.
package oneline

import (
	"strconv"
	"strings"
	"unicode"
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

// Quote writes s as it is, or Go-quoted when it holds what a plain name
// cannot show (a control character, a quote, nothing at all).
func Quote(s string) string {
	if q := strconv.Quote(s); s == "" || q[1:len(q)-1] != s {
		return q
	}
	return s
}

// Shorten cuts s to at most n bytes, marking the cut, for an excerpt of
// user input in a message.
func Shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
