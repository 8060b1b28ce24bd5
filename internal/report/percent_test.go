package report_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/softalloc/softalloc/internal/report"
)

func TestPercentHasNoNegativeZero(t *testing.T) {
	for _, c := range []struct {
		v        float64
		decimals int
		signed   bool
		want     string
	}{
		{-0.01, 1, false, "0.0%"},
		{-0.04, 1, true, "0.0%"},
		{0.04, 1, true, "0.0%"},
		{-0.06, 1, false, "-0.1%"},
		{-12.34, 1, true, "-12.3%"},
		{7.3, 1, true, "+7.3%"},
		{7.3, 1, false, "7.3%"},
		{-0.4, 0, true, "0%"},
		{-3.6, 0, true, "-4%"},
		{10, 0, true, "+10%"},
	} {
		assert.Equal(t, c.want, report.Percent(c.v, c.decimals, c.signed), "Percent(%g, %d, %t)", c.v, c.decimals, c.signed)
	}
}
