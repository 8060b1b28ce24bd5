package runner

import (
	"fmt"
	"strings"
	"time"
)

// sectionKeys are the keys of a deployment file's runner section that every
// runner shares; the rest belongs to the runner the section names (the live
// runner reads it, and refuses a key it does not know).
var sectionKeys = []string{"name", "command", "retries", "timeout", "protocol"}

// SectionError is a bad value in a deployment file's runner section.
type SectionError struct {
	File, Key, Want string
	Got             any
}

func (e *SectionError) Error() string {
	return fmt.Sprintf("deployment %q: runner.%s: want %s, got %v", e.File, e.Key, e.Want, e.Got)
}

// ApplySection reads the shared keys of a deployment file's runner section
// (name, command, retries, timeout) into cfg. A key whose command-line flag
// was given (given reports that, by key) keeps the flag's value.
func (cfg *Config) ApplySection(sec map[string]any, file string, given func(key string) bool) error {
	bad := func(key, want string, got any) error { return &SectionError{file, key, want, got} }
	for _, key := range sectionKeys {
		v, ok := sec[key]
		if !ok || given(key) {
			continue
		}
		switch key {
		case "name":
			name, isStr := v.(string)
			if !isStr {
				return bad(key, "a runner name", v)
			}
			cfg.Name = name
		case "command":
			switch c := v.(type) {
			case string:
				cfg.Command = strings.Fields(c)
			case []any:
				cfg.Command = nil
				for _, a := range c {
					s, isStr := a.(string)
					if !isStr {
						return bad(key, "a list of strings (argv)", v)
					}
					cfg.Command = append(cfg.Command, s)
				}
			default:
				return bad(key, "a list of strings (argv)", v)
			}
		case "retries":
			n, isInt := v.(int)
			if !isInt || n < 0 {
				return bad(key, "an integer >= 0", v)
			}
			cfg.Retries = n
		case "timeout":
			s, isStr := v.(string)
			d, err := time.ParseDuration(s)
			if !isStr || err != nil || d <= 0 {
				return bad(key, "a duration such as 25m", v)
			}
			cfg.Timeout = d
		case "protocol":
			n, isInt := v.(int)
			if !isInt || n < 1 || n > 2 {
				return bad(key, "the exec protocol version the program speaks, 1 or 2", v)
			}
			cfg.Protocol = n
		}
	}
	return nil
}
