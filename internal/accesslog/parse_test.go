package accesslog

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseLineForms(t *testing.T) {
	ts := time.Date(2026, 11, 27, 8, 55, 23, 0, time.UTC)
	cases := []struct {
		name, line string
		unit       Unit
		want       Entry
	}{
		{"common", `10.0.0.1 - - [27/Nov/2026:08:55:23 +0000] "GET /a?b=1 HTTP/1.1" 200 512`, UnitAuto,
			Entry{Client: "10.0.0.1", Time: ts, Method: "GET", Target: "/a?b=1", Proto: "HTTP/1.1", Status: 200, Bytes: 512}},
		{"combined", `10.0.0.1 - frank [27/Nov/2026:08:55:23 +0000] "GET / HTTP/1.0" 304 - "http://x/" "Mozilla/5.0 (X11)"`, UnitAuto,
			Entry{Client: "10.0.0.1", Time: ts, Method: "GET", Target: "/", Proto: "HTTP/1.0", Status: 304,
				Referer: "http://x/", UserAgent: "Mozilla/5.0 (X11)"}},
		{"apache %D", `::1 - - [27/Nov/2026:08:55:23 +0000] "GET / HTTP/1.1" 200 5 "-" "ua" 1500`, UnitAuto,
			Entry{Client: "::1", Time: ts, Method: "GET", Target: "/", Proto: "HTTP/1.1", Status: 200, Bytes: 5,
				UserAgent: "ua", Duration: 1500 * time.Microsecond, HasDuration: true}},
		{"apache msec_frac", `h - - [27/Nov/2026:08:55:23.250 +0000] "GET / HTTP/1.1" 200 5 "-" "ua" 7`, UnitAuto,
			Entry{Client: "h", Time: ts.Add(250 * time.Millisecond), Method: "GET", Target: "/", Proto: "HTTP/1.1",
				Status: 200, Bytes: 5, UserAgent: "ua", Duration: 7 * time.Microsecond, HasDuration: true}},
		{"apache %T", `h - - [27/Nov/2026:08:55:23 +0000] "GET / HTTP/1.1" 200 5 "-" "ua" 2`, UnitSeconds,
			Entry{Client: "h", Time: ts, Method: "GET", Target: "/", Proto: "HTTP/1.1", Status: 200, Bytes: 5,
				UserAgent: "ua", Duration: 2 * time.Second, HasDuration: true}},
		{"nginx request_time and more", `h - - [27/Nov/2026:08:55:23 +0000] "GET / HTTP/1.1" 200 5 "-" "a \"q\" b" 0.125 0.120 -`, UnitAuto,
			Entry{Client: "h", Time: ts, Method: "GET", Target: "/", Proto: "HTTP/1.1", Status: 200, Bytes: 5,
				UserAgent: `a \"q\" b`, Duration: 125 * time.Millisecond, HasDuration: true, DecimalDuration: true}},
		{"iso8601", `h - - [2026-11-27T08:55:23+00:00] "GET / HTTP/1.1" 200 5`, UnitAuto,
			Entry{Client: "h", Time: ts, Method: "GET", Target: "/", Proto: "HTTP/1.1", Status: 200, Bytes: 5}},
		{"nginx msec", `h - - [1795769723.250] "GET / HTTP/1.1" 200 5 "-" "ua" 0.004`, UnitAuto,
			Entry{Client: "h", Time: ts.Add(250 * time.Millisecond), Method: "GET", Target: "/", Proto: "HTTP/1.1", Status: 200, Bytes: 5,
				UserAgent: "ua", Duration: 4 * time.Millisecond, HasDuration: true, DecimalDuration: true}},
		{"not a request", `h - - [27/Nov/2026:08:55:23 +0000] "\x16\x03\x01" 400 226 "-" "-"`, UnitAuto,
			Entry{Client: "h", Time: ts, Status: 400, Bytes: 226}},
		{"common with duration", `h - - [27/Nov/2026:08:55:23 +0000] "GET / HTTP/1.1" 200 5 42`, UnitMilliseconds,
			Entry{Client: "h", Time: ts, Method: "GET", Target: "/", Proto: "HTTP/1.1", Status: 200, Bytes: 5,
				Duration: 42 * time.Millisecond, HasDuration: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, err := ParseLine([]byte(c.line), c.unit)
			require.NoError(t, err)
			assert.True(t, c.want.Time.Equal(e.Time), "time %v, want %v", e.Time, c.want.Time)
			e.Time = c.want.Time
			assert.Equal(t, c.want, e)
		})
	}
}

func TestParseLineNamesWhatIsWrong(t *testing.T) {
	cases := map[string]string{
		"":      "empty line",
		"h - -": "[time]",
		`h - - [yesterday] "GET / HTTP/1.1" 200 5`:                           `time: want [02/Jan/2006:15:04:05 -0700]`,
		`h - - [27/Nov/2026:08:55:23 +0000] GET / 200 5`:                     "request line in quotes",
		`h - - [27/Nov/2026:08:55:23 +0000] "GET /" OK 5`:                    `status: want a 3-digit status, got "OK"`,
		`h - - [27/Nov/2026:08:55:23 +0000] "GET /" 200 -5`:                  `bytes: want an integer >= 0 or -, got "-5"`,
		`h - - [27/Nov/2026:08:55:23 +0000] "GET /" 200 5 "-`:                "referer",
		`h - - [27/Nov/2026:08:55:23 +0000] "GET /" 200 5 "-" "ua" 1e3`:      `duration: want a number >= 0`,
		`h - - [27/Nov/2026:08:55:23 +0000] "GET /" 200 5 "-" "ua" 9e99`:     `duration: want a number >= 0`,
		`h - - [27/Nov/2026:08:55:23 +0000] "GET /" 200 5 "-" "ua" 100000.5`: "longer than a day",
	}
	for line, want := range cases {
		_, err := ParseLine([]byte(line), UnitAuto)
		require.Error(t, err, line)
		assert.Contains(t, err.Error(), want, line)
	}
}

func TestReaderCountsBadLinesAndStreams(t *testing.T) {
	good := `h - - [27/Nov/2026:08:55:23 +0000] "GET / HTTP/1.1" 200 5 "-" "ua" 10`
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		switch {
		case i == 3:
			b.WriteString("garbage\n")
		case i == 5:
			b.WriteString(strings.Repeat("x", MaxLine+10) + "\n") // too long: skipped, not buffered
		case i == 7:
			b.WriteString("\r\n")
		case i%9 == 0:
			b.WriteString("more garbage\n")
		default:
			b.WriteString(good + "\r\n")
		}
	}
	b.WriteString(good) // no final newline
	r := NewReader(strings.NewReader(b.String()), UnitAuto)
	n := 0
	for {
		e, ok := r.Next()
		if !ok {
			break
		}
		n++
		require.Equal(t, 10*time.Microsecond, e.Duration)
	}
	require.NoError(t, r.Err())
	assert.Equal(t, 16, n)
	assert.EqualValues(t, 21, r.Lines)
	assert.EqualValues(t, 1, r.Blank)
	assert.EqualValues(t, 4, r.Bad)
	var lines []int64
	for _, bl := range r.FirstBad {
		lines = append(lines, bl.Line)
	}
	assert.Equal(t, []int64{3, 5, 9, 18}, lines)
	assert.Contains(t, r.FirstBad[1].Err, fmt.Sprintf("longer than %d bytes", MaxLine))
}
