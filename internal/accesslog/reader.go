package accesslog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest line read; a longer one is a bad line (and its
// rest is skipped, not buffered).
const MaxLine = 64 << 10

// keepBad is how many bad lines a Reader names.
const keepBad = 5

// BadLine is a line that is not a log line.
type BadLine struct {
	// File is left for the caller to fill in.
	File string `json:"file,omitempty"`
	Line int64  `json:"line"`
	Err  string `json:"error"`
}

// Reader reads a log line by line, never holding more than one line: a log
// of gigabytes streams through it.
type Reader struct {
	r    *bufio.Reader
	unit Unit
	// Lines counts the lines read, blank lines included; Blank the blank
	// ones and Bad the lines that are not log lines.
	Lines, Blank, Bad int64
	// FirstBad are the first few bad lines.
	FirstBad []BadLine
	err      error
}

// NewReader reads the log from r with the duration unit given.
func NewReader(r io.Reader, unit Unit) *Reader {
	return &Reader{r: bufio.NewReaderSize(r, MaxLine), unit: unit}
}

// Next reads the next log line's entry; false at the end or on a read
// error (Err). Bad lines are counted and skipped.
func (r *Reader) Next() (Entry, bool) {
	for r.err == nil {
		line, err := r.line()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.err = fmt.Errorf("read the log at line %d: %w", r.Lines+1, err)
			} else {
				r.err = io.EOF
			}
			if line == nil {
				break
			}
		}
		r.Lines++
		if len(line) == 0 {
			r.Blank++
			continue
		}
		e, perr := ParseLine(line, r.unit)
		if perr != nil {
			r.bad(perr)
			continue
		}
		return e, true
	}
	return Entry{}, false
}

var errTooLong = fmt.Errorf("longer than %d bytes", MaxLine)

// line is the next line without its end (\n or \r\n); nil with the error at
// the end. A line over MaxLine comes back as errLong's line.
func (r *Reader) line() ([]byte, error) {
	b, err := r.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// Skip the rest of the line; it is bad.
		for errors.Is(err, bufio.ErrBufferFull) {
			_, err = r.r.ReadSlice('\n')
		}
		r.Lines++
		r.bad(errTooLong)
		if err != nil {
			return nil, err
		}
		return r.line()
	}
	if err != nil && len(b) == 0 {
		return nil, err
	}
	if n := len(b); n > 0 && b[n-1] == '\n' {
		b = b[:n-1]
	}
	if n := len(b); n > 0 && b[n-1] == '\r' {
		b = b[:n-1]
	}
	if b == nil {
		b = []byte{}
	}
	return b, err
}

func (r *Reader) bad(err error) {
	r.Bad++
	if len(r.FirstBad) < keepBad {
		r.FirstBad = append(r.FirstBad, BadLine{Line: r.Lines, Err: err.Error()})
	}
}

// Err is the read error that ended the log, nil at its end.
func (r *Reader) Err() error {
	if errors.Is(r.err, io.EOF) {
		return nil
	}
	return r.err
}
