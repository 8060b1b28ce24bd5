package report

import (
	"fmt"
	"image/color"
	"io"
	"path/filepath"
	"strings"

	"github.com/softalloc/softalloc/internal/safefile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Curve is one line of a plot.
type Curve struct {
	Label string
	X, Y  []float64
}

// palette: distinguishable colours for a handful of curves.
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

// PaletteColor is the i-th colour of the plots' palette.
func PaletteColor(i int) color.Color { return palette[i%len(palette)] }

// SavePlot draws curves as lines with points and writes path; the format
// follows the extension (.svg, .png, .pdf).
func SavePlot(path, title, xLabel, yLabel string, curves []Curve) error {
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".svg", ".png", ".pdf":
	default:
		return fmt.Errorf("plot %q: want a .svg, .png or .pdf file", path)
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = false
	p.Legend.Left = true
	for i, c := range curves {
		pts := make(plotter.XYs, len(c.X))
		for j := range c.X {
			pts[j].X, pts[j].Y = c.X[j], c.Y[j]
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return fmt.Errorf("plot %q: %s: %w", path, c.Label, err)
		}
		col := palette[i%len(palette)]
		line.Color, points.Color = col, col
		line.Width = vg.Points(1.5)
		p.Add(line, points)
		p.Legend.Add(c.Label, line, points)
	}
	wt, err := p.WriterTo(8*vg.Inch, 5*vg.Inch, ext[1:])
	if err != nil {
		return fmt.Errorf("plot %q: %w", path, err)
	}
	if err := safefile.Write(path, 0o644, func(w io.Writer) error { _, err := wt.WriteTo(w); return err }); err != nil {
		return fmt.Errorf("plot %q: %w", path, err)
	}
	return nil
}
