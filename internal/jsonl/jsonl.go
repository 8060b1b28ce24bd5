// Package jsonl reads JSON Lines files (journals, replay campaigns, recorded
// observations) with a bound on each line, so that a file that is not one
// (a device, a binary, a runaway line) is refused with a message instead of
// being read into memory whole.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// MaxLine is the longest line a record may be: an observation with a
// response-time histogram of every bucket a recorder has is about 60 KB.
const MaxLine = 8 << 20

// ErrLineTooLong is a line longer than the bound.
var ErrLineTooLong = errors.New("line too long")

// Read splits r into whole lines (without their newline; a final CR is kept
// out too) and returns an unterminated last line apart as tail, raw. A whole
// line longer than maxLine bytes is an error naming its number.
func Read(r io.Reader, maxLine int) (lines [][]byte, tail []byte, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := readLine(br, maxLine)
		if errors.Is(err, ErrLineTooLong) {
			return lines, nil, fmt.Errorf("line %d: longer than %d MiB: %w", n, maxLine>>20, err)
		}
		if err == io.EOF {
			if len(line) > 0 {
				return lines, line, nil
			}
			return lines, nil, nil
		}
		if err != nil {
			return lines, nil, err
		}
		lines = append(lines, bytes.TrimSuffix(line, []byte("\r")))
	}
}

// readLine reads one line without its newline; io.EOF with the bytes read
// when the input ends first.
func readLine(br *bufio.Reader, maxLine int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxLine+1 {
			return nil, ErrLineTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return line, err
		}
	}
}

// Torn says whether an unterminated last line is a record cut short (by a
// run killed mid-write): a JSON object whose text is valid as far as it
// goes and ends too soon. Anything else there (text appended by hand, a
// whole record without its newline) is not.
func Torn(tail []byte) bool {
	t := bytes.TrimSpace(tail)
	if len(t) == 0 || t[0] != '{' {
		return false
	}
	var v any
	var se *json.SyntaxError
	err := json.Unmarshal(t, &v)
	return errors.As(err, &se) && se.Offset == int64(len(t))
}
