// Package accesslog reads web servers' access logs (Apache's and nginx's
// common and combined formats, with the request's duration when the log has
// it) and infers from them the workload that produced them: the pages as
// templates with parameters, the users' sessions, the mix, the transitions
// and the think time, as a workload file (internal/workload) that the live
// runner's load generator and the Locust adapter replay.
//
// The lines it accepts are
//
//	%h %l %u %t "%r" %>s %b                                  (common)
//	%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-Agent}i"   (combined)
//
// either followed by the request's duration and by anything else (ignored).
// The time in brackets may carry a fraction of a second
// ([27/Nov/2026:08:55:23.123 +0000], Apache's %{msec_frac}t), be ISO 8601
// (nginx's $time_iso8601) or seconds since 1970 (nginx's $msec). The duration is the first field after the user
// agent (after %b in the common format): with a decimal point it is seconds
// (nginx's $request_time), an integer is microseconds (Apache's %D) unless
// the unit says otherwise (Apache's %T is whole seconds).
package accesslog

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ApacheLogFormat is the LogFormat to give Apache for softalloc workload
// --from-log: combined, the arrival's milliseconds (%t is to the second,
// which leaves only the mean of short think times right) and %D.
const ApacheLogFormat = `%h %l %u [%{%d/%b/%Y:%H:%M:%S}t.%{msec_frac}t %{%z}t] "%r" %>s %b "%{Referer}i" "%{User-Agent}i" %D`

// ApacheLogConfig is Apache's configuration for a log in ApacheLogFormat
// at path, its long line continued so that it prints within 100 columns.
func ApacheLogConfig(path string) string {
	f := strings.ReplaceAll(ApacheLogFormat, `"`, `\"`)
	cut := strings.Index(f, ` \"%{Referer}`)
	return "LogFormat \"" + f[:cut] + " \\\n    " + f[cut+1:] + "\" softalloc\nCustomLog " + path + " softalloc\n"
}

// NginxLogFormat is the log_format to give nginx: combined with the time
// to the millisecond ($msec; $time_local and $time_iso8601 are to the
// second) and $request_time.
const NginxLogFormat = `$remote_addr - $remote_user [$msec] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_time`

// NginxLogConfig is nginx's configuration for a log in NginxLogFormat at
// path, within 100 columns.
func NginxLogConfig(path string) string {
	cut := strings.Index(NginxLogFormat, ` $status`)
	return "log_format softalloc '" + NginxLogFormat[:cut] + "'\n    '" + NginxLogFormat[cut:] + "';\naccess_log " + path + " softalloc;\n"
}

// Unit is the unit of the duration field.
type Unit int

// The duration units: Auto reads a number with a decimal point as seconds
// and an integer as microseconds.
const (
	UnitAuto Unit = iota
	UnitMicroseconds
	UnitMilliseconds
	UnitSeconds
)

// ParseUnit reads "auto", "us", "ms" or "s".
func ParseUnit(s string) (Unit, error) {
	switch s {
	case "", "auto":
		return UnitAuto, nil
	case "us", "µs", "microseconds":
		return UnitMicroseconds, nil
	case "ms", "milliseconds":
		return UnitMilliseconds, nil
	case "s", "seconds":
		return UnitSeconds, nil
	}
	return 0, fmt.Errorf("want a duration unit auto, us, ms or s, got %q", s)
}

// Entry is one request of the log. Its strings alias the line's bytes only
// while the line is read: ParseLine copies them.
type Entry struct {
	// Client is %h, the client's address (or host name).
	Client string
	// Time is %t as logged: Apache logs when the request arrived, nginx when
	// the answer was sent.
	Time time.Time
	// Method, Target and Proto are the request line's parts; Method is
	// empty when the request line is not a request ("-", a TLS handshake
	// on a plain port).
	Method, Target, Proto string
	Status                int
	// Bytes is %b (0 for "-").
	Bytes int64
	// Referer and UserAgent are empty in the common format.
	Referer, UserAgent string
	// Duration is the time the server took; HasDuration is false when the
	// line has none. DecimalDuration says the field had a decimal point
	// (nginx's $request_time), which UnitAuto reads as seconds.
	Duration        time.Duration
	HasDuration     bool
	DecimalDuration bool
}

// maxDuration bounds a duration field: a day is longer than any request.
const maxDuration = 24 * time.Hour

// ParseLine reads one log line (without its newline).
func ParseLine(line []byte, unit Unit) (Entry, error) {
	var e Entry
	p := parser{b: line}
	host := p.token()
	if host == nil {
		return e, errors.New("empty line")
	}
	e.Client = string(host)
	if p.token() == nil { // %l
		return e, errors.New("want %l (ident) after the client")
	}
	if p.token() == nil { // %u
		return e, errors.New("want %u (user) after %l")
	}
	ts, ok := p.bracketed()
	if !ok {
		return e, errors.New("want [time] after %u")
	}
	t, err := parseTime(ts)
	if err != nil {
		return e, err
	}
	e.Time = t
	req, ok := p.quoted()
	if !ok {
		return e, errors.New(`want the request line in quotes ("GET /path HTTP/1.1") after the time`)
	}
	e.Method, e.Target, e.Proto = splitRequest(req)
	st := p.token()
	status, err := strconv.Atoi(string(st))
	if err != nil || status < 100 || status > 999 {
		return e, fmt.Errorf("status: want a 3-digit status, got %q", clip(st))
	}
	e.Status = status
	b := p.token()
	switch {
	case b == nil:
		return e, errors.New("want %b (bytes) after the status")
	case string(b) == "-":
	default:
		n, err := strconv.ParseInt(string(b), 10, 64)
		if err != nil || n < 0 {
			return e, fmt.Errorf("bytes: want an integer >= 0 or -, got %q", clip(b))
		}
		e.Bytes = n
	}
	p.space()
	if p.peek() == '"' {
		ref, ok := p.quoted()
		if !ok {
			return e, errors.New("referer: want a quoted field")
		}
		ua, ok := p.quoted()
		if !ok {
			return e, errors.New("user agent: want a quoted field after the referer")
		}
		if string(ref) != "-" {
			e.Referer = string(ref)
		}
		if string(ua) != "-" {
			e.UserAgent = string(ua)
		}
	}
	if d := p.token(); d != nil && string(d) != "-" {
		if err := e.setDuration(d, unit); err != nil {
			return e, err
		}
	}
	return e, nil
}

func (e *Entry) setDuration(d []byte, unit Unit) error {
	v, err := strconv.ParseFloat(string(d), 64)
	// Only plain decimal numbers: ParseFloat also reads "inf", "0x1p3" and "1e3".
	if err != nil || !(v >= 0) || bytes.IndexFunc(d, func(r rune) bool { return (r < '0' || r > '9') && r != '.' }) >= 0 {
		return fmt.Errorf("duration: want a number >= 0 after the user agent (%%D, %%T or $request_time), got %q", clip(d))
	}
	e.DecimalDuration = bytes.IndexByte(d, '.') >= 0
	scale := map[Unit]float64{UnitMicroseconds: 1e3, UnitMilliseconds: 1e6, UnitSeconds: 1e9}[unit]
	if unit == UnitAuto {
		scale = 1e3
		if e.DecimalDuration {
			scale = 1e9
		}
	}
	ns := v * scale
	if ns > float64(maxDuration) || math.IsNaN(ns) {
		return fmt.Errorf("duration: %q is longer than a day; want %%D in microseconds, %%T or $request_time in seconds", clip(d))
	}
	e.Duration, e.HasDuration = time.Duration(ns), true
	return nil
}

// splitRequest splits "GET /path HTTP/1.1"; a request line that is not one
// gives empty parts.
func splitRequest(r []byte) (method, target, proto string) {
	m, rest, ok := bytes.Cut(r, []byte(" "))
	if !ok || len(m) == 0 || len(m) > 16 {
		return "", "", ""
	}
	for _, c := range m {
		if c < 'A' || c > 'Z' {
			return "", "", ""
		}
	}
	t, pr, _ := bytes.Cut(rest, []byte(" "))
	if len(t) == 0 {
		return "", "", ""
	}
	return string(m), string(t), string(pr)
}

// clfLayout is %t; Go's parser takes a fraction of a second after the
// seconds even though the layout has none.
const clfLayout = "02/Jan/2006:15:04:05 -0700"

func parseTime(b []byte) (time.Time, error) {
	s := string(b)
	if sec, frac, ok := strings.Cut(s, "."); ok && isDigits(sec) && isDigits(frac) && len(sec) <= 11 && len(frac) <= 9 {
		// nginx's $msec: seconds since the epoch, to the millisecond.
		n, _ := strconv.ParseInt(sec, 10, 64)
		f, _ := strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
		return time.Unix(n, f).UTC(), nil
	}
	t, err := time.Parse(clfLayout, s)
	if err != nil {
		var err2 error
		if t, err2 = time.Parse(time.RFC3339Nano, s); err2 != nil {
			return t, fmt.Errorf("time: want [02/Jan/2006:15:04:05 -0700] (a fraction of a second allowed), ISO 8601 or seconds since 1970 with a fraction ($msec), got %q", clip(b))
		}
	}
	return t, nil
}

// clip keeps a quoted bad value short.
func clip(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// parser walks a line's fields.
type parser struct {
	b []byte
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) && (p.b[p.i] == ' ' || p.b[p.i] == '\t') {
		p.i++
	}
}

func (p *parser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// token is the next run of non-blank bytes, nil at the end.
func (p *parser) token() []byte {
	p.space()
	j := p.i
	for p.i < len(p.b) && p.b[p.i] != ' ' && p.b[p.i] != '\t' {
		p.i++
	}
	if j == p.i {
		return nil
	}
	return p.b[j:p.i]
}

// bracketed is the next [...] field.
func (p *parser) bracketed() ([]byte, bool) {
	p.space()
	if p.peek() != '[' {
		return nil, false
	}
	k := bytes.IndexByte(p.b[p.i:], ']')
	if k < 0 {
		return nil, false
	}
	v := p.b[p.i+1 : p.i+k]
	p.i += k + 1
	return v, true
}

// quoted is the next "..." field, with Apache's and nginx's escapes (\" and
// \\, and nginx's \x22) left as they are: only a quote preceded by an odd
// number of backslashes is inside the field.
func (p *parser) quoted() ([]byte, bool) {
	p.space()
	if p.peek() != '"' {
		return nil, false
	}
	j := p.i + 1
	for k := j; k < len(p.b); k++ {
		switch p.b[k] {
		case '\\':
			k++ // skip the escaped byte
		case '"':
			p.i = k + 1
			// A field must end at a blank or the line's end.
			if p.i < len(p.b) && p.b[p.i] != ' ' && p.b[p.i] != '\t' {
				return nil, false
			}
			return p.b[j:k], true
		}
	}
	return nil, false
}
