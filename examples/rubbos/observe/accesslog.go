package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// request is one line of an access log.
type request struct {
	start    time.Time // %t: when the server received the request
	duration float64   // seconds, from %D or %T
	path     string
	status   int
}

// clfTime is the layout of %t in Apache's and Tomcat's logs.
const clfTime = "02/Jan/2006:15:04:05 -0700"

// parseAccessLog reads an Apache or Tomcat access log whose lines start
// like the Common Log Format and end with the time taken:
//
//	Apache: LogFormat "%h %l %u %t \"%r\" %>s %b \"%{Referer}i\" \"%{User-Agent}i\" %D"
//	Tomcat: pattern="%h %l %u %t &quot;%r&quot; %s %b %D"
//
// unit is the duration field's unit in seconds: 1e-6 for Apache's %D (and
// Tomcat 10.1+'s), 1e-3 for Tomcat's %D up to 10.0, 1 for %T.
// A line that does not parse is an error naming it: a wrong LogFormat
// would otherwise give plausible, wrong numbers.
func parseAccessLog(r io.Reader, unit float64) ([]request, error) {
	var out []request
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.TrimSpace(text) == "" {
			continue
		}
		req, err := parseLine(text, unit)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w: %q", line, err, shorten(text, 160))
		}
		out = append(out, req)
	}
	return out, sc.Err()
}

func parseLine(s string, unit float64) (request, error) {
	var r request
	open, end := strings.IndexByte(s, '['), strings.IndexByte(s, ']')
	if open < 0 || end < open {
		return r, fmt.Errorf("no [%%t] timestamp")
	}
	t, err := time.Parse(clfTime, s[open+1:end])
	if err != nil {
		return r, fmt.Errorf("timestamp: %w", err)
	}
	r.start = t
	rest := s[end+1:]
	q := strings.IndexByte(rest, '"')
	if q < 0 {
		return r, fmt.Errorf("no quoted request line")
	}
	reqLine, after, ok := quoted(rest[q+1:])
	if !ok {
		return r, fmt.Errorf("unterminated request line")
	}
	if f := strings.Fields(reqLine); len(f) >= 2 {
		r.path = f[1]
	}
	f := strings.Fields(after)
	if len(f) < 3 {
		return r, fmt.Errorf("want status, bytes, ..., time taken after the request line")
	}
	if r.status, err = strconv.Atoi(f[0]); err != nil {
		return r, fmt.Errorf("status %q", f[0])
	}
	d, err := strconv.ParseFloat(f[len(f)-1], 64)
	if err != nil || d < 0 {
		return r, fmt.Errorf("time taken %q: want a number as the last field (%%D or %%T)", f[len(f)-1])
	}
	r.duration = d * unit
	return r, nil
}

// quoted returns the text up to the closing quote (a backslash escapes a
// quote, as Apache writes them) and what follows it.
func quoted(s string) (inner, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
