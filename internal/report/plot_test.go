package report

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// twoDiagonals reach every corner of the data area, where a legend drawn
// over the data would sit.
func twoDiagonals(label string) []Curve {
	return []Curve{
		{Label: label + " rising", X: []float64{0, 500, 1000}, Y: []float64{0, 125, 250}},
		{Label: label + " falling", X: []float64{0, 500, 1000}, Y: []float64{250, 125, 0}, Mark: PointsOnly},
	}
}

func TestPlotRenderedToPNGIsLegible(t *testing.T) {
	for _, label := range []string{"short", strings.Repeat("a label long enough to go below the data ", 2)} {
		t.Run(label[:5], func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plot.png")
			curves := twoDiagonals(label)
			require.NoError(t, SavePlot(path, "title", "workload [users]", "goodput [pages/s]", curves))
			img := decodePNG(t, path)
			const dpi = vgimg.DefaultDPI
			px := func(l vg.Length) int { return int(l.Dots(dpi)) }
			require.Equal(t, image.Pt(px(PlotWidth), px(PlotHeight)), img.Bounds().Size())

			// The layout the figure was drawn with, in pixels (y grows downwards in the image).
			p, err := CurvesPlot("title", "workload [users]", "goodput [pages/s]", curves)
			require.NoError(t, err)
			dc := draw.New(vgimg.NewWith(vgimg.UseWH(PlotWidth, PlotHeight), vgimg.UseDPI(dpi)))
			plotArea, legendArea := figureLayout(p, dc)
			toPixels := func(r vg.Rectangle) image.Rectangle {
				return image.Rect(px(r.Min.X), img.Bounds().Dy()-px(r.Max.Y), px(r.Max.X), img.Bounds().Dy()-px(r.Min.Y))
			}
			data := toPixels(p.DataCanvas(plotArea).Rectangle)
			legend := toPixels(p.Legend.Rectangle(legendArea))
			assert.False(t, data.Overlaps(legend), "legend %v on the data %v", legend, data)

			for i := range curves {
				c := PaletteColor(i)
				assert.Positive(t, countColour(img, data, c), "curve %d not drawn in the data area %v", i, data)
				assert.Positive(t, countColour(img, legend, c), "curve %d has no key in the legend %v", i, legend)
			}
			// Nothing runs off the figure: the outermost pixels are background.
			b := img.Bounds()
			for _, edge := range []image.Rectangle{
				image.Rect(b.Max.X-2, 0, b.Max.X, b.Max.Y), image.Rect(0, 0, b.Max.X, 2),
				image.Rect(0, b.Max.Y-2, b.Max.X, b.Max.Y), image.Rect(0, 0, 2, b.Max.Y),
			} {
				assert.Zero(t, countInk(img, edge), "ink at the figure's edge %v", edge)
			}
		})
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	img, err := png.Decode(f)
	require.NoError(t, err)
	return img
}

// countColour counts the pixels within r close to c (anti-aliasing blends edges).
func countColour(img image.Image, r image.Rectangle, c color.Color) int {
	want := color.RGBAModel.Convert(c).(color.RGBA)
	n := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			got := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			if near(got.R, want.R) && near(got.G, want.G) && near(got.B, want.B) {
				n++
			}
		}
	}
	return n
}

func near(a, b uint8) bool { d := int(a) - int(b); return d > -12 && d < 12 }

// countInk counts the pixels within r that are not white.
func countInk(img image.Image, r image.Rectangle) int {
	return r.Dx()*r.Dy() - countColour(img, r, color.White)
}

func TestTidyTicksPrintIntegersAsIntegers(t *testing.T) {
	labels := func(min, max float64) []string {
		var out []string
		for _, tk := range (TidyTicks{plot.DefaultTicks{}}).Ticks(min, max) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	assert.Equal(t, []string{"0", "100", "200"}, labels(0, 250))
	assert.Equal(t, []string{"0", "0.5", "1"}, labels(0, 1))
	assert.Equal(t, []string{"0", "2.5", "5"}, labels(0, 5.06))
	assert.Equal(t, []string{"0.25", "0.75", "1.25"}, labels(0.2, 1.4))
}

func TestSVGCarriesItsFonts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plot.svg")
	require.NoError(t, SavePlot(path, "title", "x", "y", twoDiagonals("curve")))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Contains(t, string(b), "@font-face")
	assert.Contains(t, string(b), "base64,")
}

func TestPlotFormatFollowsTheExtension(t *testing.T) {
	dir := t.TempDir()
	for _, ext := range []string{".svg", ".png", ".pdf", ".PNG"} {
		require.NoError(t, SavePlot(filepath.Join(dir, "p"+ext), "t", "x", "y", twoDiagonals("c")), ext)
	}
	err := SavePlot(filepath.Join(dir, "p.jpg"), "t", "x", "y", twoDiagonals("c"))
	require.ErrorContains(t, err, "want a .svg, .png or .pdf file")
	_, statErr := os.Stat(filepath.Join(dir, "p.jpg"))
	assert.ErrorIs(t, statErr, os.ErrNotExist)
}
