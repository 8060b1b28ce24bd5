package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPercentHasNoNegativeZero(t *testing.T) {
	for _, c := range []struct {
		v      float64
		signed bool
		want   string
	}{
		{-0.01, false, "0.0%"},
		{-0.04, true, "0.0%"},
		{0.04, true, "0.0%"},
		{-0.06, false, "-0.1%"},
		{-12.34, true, "-12.3%"},
		{7.25, true, "+7.2%"},
		{7.25, false, "7.2%"},
	} {
		assert.Equal(t, c.want, percent(c.v, c.signed), "percent(%g, %t)", c.v, c.signed)
	}
}
