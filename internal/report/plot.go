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
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Curve is one line of a plot.
type Curve struct {
	Label string
	X, Y  []float64
	Mark  Mark
}

// Mark is how a curve is drawn.
type Mark int

const (
	// LinePoints joins measured points with a line.
	LinePoints Mark = iota
	// PointsOnly draws measurements whose order means nothing: a line
	// through them would invent a path.
	PointsOnly
	// LineOnly draws a model's line, which has no measured points.
	LineOnly
)

// palette: distinguishable colours for a handful of curves.
var palette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff},
}

// PaletteColor is the i-th colour of the plots' palette.
func PaletteColor(i int) color.Color { return palette[i%len(palette)] }

// glyphs tell curves apart where colours do not (print, colour blindness).
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{},
	draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{},
}

// PaletteGlyph is the i-th point shape, paired with PaletteColor(i).
func PaletteGlyph(i int) draw.GlyphDrawer { return glyphs[i%len(glyphs)] }

// Plot sizes: wide enough for a legend beside the data.
const (
	PlotWidth  = 8 * vg.Inch
	PlotHeight = 5 * vg.Inch
)

// NewPlot is a plot with the house style: a grid, and tick labels that
// print integers as integers.
func NewPlot(title, xLabel, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xLabel
	p.Y.Label.Text = yLabel
	p.X.Tick.Marker = TidyTicks{plot.DefaultTicks{}}
	p.Y.Tick.Marker = TidyTicks{plot.DefaultTicks{}}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// SavePlot draws curves and writes path; the format follows the extension
// (.svg, .png, .pdf).
func SavePlot(path, title, xLabel, yLabel string, curves []Curve) error {
	if err := checkPlotPath(path); err != nil {
		return err
	}
	p, err := CurvesPlot(title, xLabel, yLabel, curves)
	if err != nil {
		return fmt.Errorf("plot %q: %w", path, err)
	}
	return SaveFigure(path, p, PlotWidth, PlotHeight)
}

// CurvesPlot is a plot of curves, each in its own colour and point shape.
func CurvesPlot(title, xLabel, yLabel string, curves []Curve) (*plot.Plot, error) {
	p := NewPlot(title, xLabel, yLabel)
	for i, c := range curves {
		pts := make(plotter.XYs, len(c.X))
		for j := range c.X {
			pts[j].X, pts[j].Y = c.X[j], c.Y[j]
		}
		var thumbs []plot.Thumbnailer
		if c.Mark != PointsOnly {
			line, err := plotter.NewLine(pts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Label, err)
			}
			line.Color, line.Width = PaletteColor(i), vg.Points(1.5)
			p.Add(line)
			thumbs = append(thumbs, line)
		}
		if c.Mark != LineOnly {
			points, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.Label, err)
			}
			points.Color, points.Shape = PaletteColor(i), PaletteGlyph(i)
			p.Add(points)
			thumbs = append(thumbs, points)
		}
		p.Legend.Add(c.Label, thumbs...)
	}
	return p, nil
}

func checkPlotPath(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png", ".pdf":
		return nil
	}
	return fmt.Errorf("plot %q: want a .svg, .png or .pdf file", path)
}

// SaveFigure writes p at w×h to path in the format its extension names, with
// the legend beside the data (or below it when the labels are long) so that
// it never hides a point, and with the fonts embedded in SVG and PDF so that
// the text looks the same wherever the file is opened.
func SaveFigure(path string, p *plot.Plot, w, h vg.Length) error {
	if err := checkPlotPath(path); err != nil {
		return err
	}
	var c interface {
		vg.CanvasSizer
		io.WriterTo
	}
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg":
		c = vgsvg.NewWith(vgsvg.UseWH(w, h), vgsvg.EmbedFonts(true))
	case ".png":
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(vgimg.DefaultDPI))}
	case ".pdf":
		pdf := vgpdf.New(w, h)
		pdf.EmbedFonts(true)
		c = pdf
	}
	drawFigure(p, draw.New(c))
	if err := safefile.Write(path, 0o644, func(out io.Writer) error { _, err := c.WriteTo(out); return err }); err != nil {
		return fmt.Errorf("plot %q: %w", path, err)
	}
	return nil
}

// figureLayout splits a figure's canvas into the plot's part and the
// legend's; an empty legend gets no room.
func figureLayout(p *plot.Plot, dc draw.Canvas) (plotArea, legendArea draw.Canvas) {
	gap := vg.Points(8)
	// A margin keeps the title's ascenders and the rotated y label off the edges.
	dc = draw.Crop(dc, gap/2, -gap/2, gap/2, -gap/2)
	legend := p.Legend.Rectangle(dc).Size()
	if legend.X == 0 {
		return dc, draw.Canvas{}
	}
	if legend.X < dc.Size().X*0.3 {
		plotArea = draw.Crop(dc, 0, -(legend.X + 2*gap), 0, 0)
		// The legend starts level with the top of the data, right of the
		// plot; the x axis' last tick label may spill into this column, which
		// keeps it from being clipped at the figure's edge.
		top := p.DataCanvas(plotArea).Max.Y
		legendArea = draw.Crop(dc, dc.Size().X-legend.X-gap, -gap, 0, top-dc.Max.Y)
		return plotArea, legendArea
	}
	plotArea = draw.Crop(dc, 0, -gap, legend.Y+2*gap, 0)
	legendArea = draw.Crop(dc, p.DataCanvas(plotArea).Min.X-dc.Min.X, -gap, 0, -(dc.Size().Y - legend.Y - gap))
	// Exactly the legend's width, where Legend.Rectangle agrees with Legend.Draw.
	legendArea.Max.X = min(legendArea.Max.X, legendArea.Min.X+legend.X)
	return plotArea, legendArea
}

func drawFigure(p *plot.Plot, dc draw.Canvas) {
	plotArea, legendArea := figureLayout(p, dc)
	legend := p.Legend
	// Plot.Draw would draw the legend again, on the data.
	p.Legend = plot.NewLegend()
	defer func() { p.Legend = legend }()
	p.Draw(plotArea)
	legend.Top, legend.Left = true, true
	legend.XOffs, legend.YOffs = 0, 0
	legend.Draw(legendArea)
}

// TidyTicks labels ticks without trailing zeros: a count reads 250, not
// 250.00, and a fraction 0.5, not 0.50.
type TidyTicks struct{ plot.Ticker }

// Ticks returns the ticks of the wrapped Ticker with their labels tidied.
func (t TidyTicks) Ticks(min, max float64) []plot.Tick {
	ticks := t.Ticker.Ticks(min, max)
	for i, tk := range ticks {
		if strings.Contains(tk.Label, ".") && !strings.ContainsAny(tk.Label, "eE") {
			ticks[i].Label = strings.TrimSuffix(strings.TrimRight(tk.Label, "0"), ".")
		}
	}
	return ticks
}
