// Package fuzzcheck holds the checks the parsers' fuzz targets share: an
// error is one line, a parsed value holds no NaN.
package fuzzcheck

import (
	"math"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// RequireOneLine fails unless err reads as one non-empty line: the CLI
// prints an error as one line on stderr.
func RequireOneLine(t testing.TB, err error) {
	t.Helper()
	msg := err.Error()
	require.NotEmpty(t, msg)
	require.NotContains(t, msg, "\n", "a multi-line error")
	require.NotContains(t, msg, "\r", "an error with a carriage return")
}

// HasNaN reports whether any float in v, followed through pointers, lists
// and maps, is NaN: a NaN passes every range check written as a comparison.
func HasNaN(v any) bool { return hasNaN(reflect.ValueOf(v)) }

func hasNaN(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return math.IsNaN(v.Float())
	case reflect.Pointer, reflect.Interface:
		return !v.IsNil() && hasNaN(v.Elem())
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if hasNaN(v.Field(i)) {
				return true
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			if hasNaN(v.Index(i)) {
				return true
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if hasNaN(it.Value()) {
				return true
			}
		}
	}
	return false
}
