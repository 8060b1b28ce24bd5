package live

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// prom evaluates the deployment file's queries over Prometheus's HTTP API.
type prom struct {
	api     v1.API
	address string
	timeout time.Duration // each query's bound, the section's queryTimeout; 0: each kind's default
}

// Each kind of query's bound when the section sets no queryTimeout.
const (
	instantTimeout = 30 * time.Second
	rangeTimeout   = 2 * time.Minute
	seriesTimeout  = time.Minute
)

// bound is the context of one query: the section's queryTimeout, or def.
func (p *prom) bound(ctx context.Context, def time.Duration) (context.Context, context.CancelFunc, time.Duration) {
	d := def
	if p.timeout > 0 {
		d = p.timeout
	}
	qctx, cancel := context.WithTimeout(ctx, d)
	return qctx, cancel, d
}

// late names the bound a query outlasted, and the setting that sets it:
// "context deadline exceeded" alone named neither.
func late(ctx context.Context, d time.Duration, err error) error {
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("prometheus did not answer within %v (the runner section's queryTimeout): %w", d, err)
	}
	return err
}

// maxPromBody bounds one answer of Prometheus: client_golang reads a body
// whole, and a Prometheus (or a proxy before it) answering 6 GB ran the
// runner out of memory. The largest answer the runner asks for, a range
// query of 10,000 steps (maxPoints), is about a megabyte a series. A
// variable so that a test can make it small.
var maxPromBody int64 = 64 << 20

// errBodyTooLarge is an answer past maxPromBody.
type errBodyTooLarge struct{ url string }

func (e errBodyTooLarge) Error() string {
	return fmt.Sprintf("%s answered more than %d bytes (the bound on one answer of Prometheus): narrow the query, or take a shorter range or a longer step", e.url, maxPromBody)
}

// boundedTransport stops reading an answer past maxPromBody.
type boundedTransport struct{ rt http.RoundTripper }

func (b boundedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := b.rt.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	u := *req.URL
	u.RawQuery, u.User = "", nil // the query is named by the caller; no credentials in a message
	resp.Body = &boundedBody{rc: resp.Body, left: maxPromBody, url: u.String()}
	return resp, nil
}

type boundedBody struct {
	rc   io.ReadCloser
	left int64
	url  string
}

func (b *boundedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, errBodyTooLarge{b.url}
	}
	// One byte past the bound tells a body of exactly maxPromBody from a longer one.
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.left < 0 {
		return n, errBodyTooLarge{b.url}
	}
	return n, err
}

func (b *boundedBody) Close() error { return b.rc.Close() }

func newProm(address string, rt http.RoundTripper, timeout time.Duration) (*prom, error) {
	c, err := api.NewClient(api.Config{Address: address, RoundTripper: boundedTransport{rt}})
	if err != nil {
		return nil, fmt.Errorf("prometheus %q: %w", address, err)
	}
	return &prom{api: v1.NewAPI(c), address: address, timeout: timeout}, nil
}

// errNoData is a query that matched no series.
var errNoData = errors.New("no data")

// errQuery marks a query that cannot work whatever the retry (bad syntax,
// several series): retrying the trial would not help.
type errQuery struct{ err error }

func (e errQuery) Error() string { return e.err.Error() }
func (e errQuery) Unwrap() error { return e.err }

// value evaluates q at t and returns its one number.
func (p *prom) value(ctx context.Context, q string, t time.Time) (float64, error) {
	qctx, cancel, d := p.bound(ctx, instantTimeout)
	defer cancel()
	v, _, _, err := p.api.Query(qctx, q, t)
	if err != nil {
		return 0, p.queryError(q, late(ctx, d, err))
	}
	switch r := v.(type) {
	case *model.Scalar:
		return float64(r.Value), nil
	case model.Vector:
		switch len(r) {
		case 0:
			return 0, fmt.Errorf("query %s: %w", q, errNoData)
		case 1:
			return float64(r[0].Value), nil
		}
		var series []string
		for _, s := range r[:min(3, len(r))] {
			series = append(series, s.Metric.String())
		}
		return 0, errQuery{fmt.Errorf("query %s: %d series (%s ...); want one number per server: aggregate with sum() or narrow the selector",
			q, len(r), strings.Join(series, ", "))}
	}
	return 0, errQuery{fmt.Errorf("query %s: a %s; want a scalar or an instant vector", q, v.Type())}
}

// series evaluates q at step from start to end and returns n values, one
// per step: a step with no sample takes the value before (0 at the start).
func (p *prom) series(ctx context.Context, q string, start, end time.Time, step time.Duration, n int) ([]float64, error) {
	qctx, cancel, d := p.bound(ctx, instantTimeout)
	defer cancel()
	v, _, _, err := p.api.QueryRange(qctx, q, v1.Range{Start: start, End: end, Step: step})
	if err != nil {
		return nil, p.queryError(q, late(ctx, d, err))
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, errQuery{fmt.Errorf("query %s: a %s over a range; want one series", q, v.Type())}
	}
	switch {
	case len(m) == 0:
		return nil, fmt.Errorf("query %s: %w", q, errNoData)
	case len(m) > 1:
		return nil, errQuery{fmt.Errorf("query %s: %d series; want one number per server: aggregate with sum() or narrow the selector", q, len(m))}
	}
	// Prometheus evaluates at start + i step, to the millisecond: each
	// step takes the sample nearest to it within half a step, or else the
	// value before it (0 at the start).
	out := make([]float64, n)
	last, k := 0.0, 0
	vals := m[0].Values
	for i := range out {
		at := start.Add(time.Duration(i) * step)
		for k < len(vals) && vals[k].Timestamp.Time().Before(at.Add(-step/2)) {
			k++
		}
		if k < len(vals) && !vals[k].Timestamp.Time().After(at.Add(step/2)) {
			if f := float64(vals[k].Value); !math.IsNaN(f) && !math.IsInf(f, 0) {
				last = f
			}
			k++
		}
		out[i] = last
	}
	return out, nil
}

// waitScraped polls until every target's last scrape is at or after t, so
// that the window's last seconds are in Prometheus before it is queried.
func (p *prom) waitScraped(ctx context.Context, t time.Time, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	const q = "min(timestamp(up))"
	var last error
	for {
		v, err := p.value(ctx, q, time.Time{})
		switch {
		case err == nil && !math.IsNaN(v) && v >= float64(t.UnixMilli())/1000:
			return nil
		case errors.As(err, new(errQuery)):
			return err // not Prometheus, or a query it refuses: waiting will not help
		case err != nil:
			last = err
		default:
			last = fmt.Errorf("the oldest last scrape is %.1f s before the window's end", float64(t.UnixMilli())/1000-v)
		}
		tm := time.NewTimer(250 * time.Millisecond)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("prometheus did not scrape every target past the window's end within %v: %w", timeout, last)
			}
			return ctx.Err()
		}
	}
}

// queryError classifies a failed query: one Prometheus refuses (bad
// syntax), or an answer that is not its HTTP API at all (the prometheus URL
// names another server), cannot work whatever the retry.
func (p *prom) queryError(q string, err error) error {
	var ae *v1.Error
	switch {
	case errors.As(err, new(errBodyTooLarge)):
		return errQuery{fmt.Errorf("query %s: %w", q, err)}
	case errors.As(err, &ae) && ae.Type == v1.ErrBadData:
		return errQuery{fmt.Errorf("query %s: %w", q, err)}
	case errors.As(err, &ae) && ae.Type == v1.ErrBadResponse:
		return errQuery{fmt.Errorf("query %s: %s did not answer as Prometheus's HTTP API does (is it the Prometheus URL?): %w", q, p.address, err)}
	}
	return fmt.Errorf("query %s: %w", q, err)
}
