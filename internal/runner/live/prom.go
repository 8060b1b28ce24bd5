package live

import (
	"context"
	"errors"
	"fmt"
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
	api v1.API
}

func newProm(address string, rt http.RoundTripper) (*prom, error) {
	c, err := api.NewClient(api.Config{Address: address, RoundTripper: rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus %q: %w", address, err)
	}
	return &prom{api: v1.NewAPI(c)}, nil
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
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	v, _, _, err := p.api.Query(ctx, q, t)
	if err != nil {
		var ae *v1.Error
		if errors.As(err, &ae) && ae.Type == v1.ErrBadData {
			return 0, errQuery{fmt.Errorf("query %s: %w", q, err)}
		}
		return 0, fmt.Errorf("query %s: %w", q, err)
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
