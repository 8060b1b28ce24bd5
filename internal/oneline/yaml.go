package oneline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DecodeYAML decodes the first YAML document of data into v (a pointer to a
// struct), rejecting unknown fields. Its errors are one line and speak of the
// document, not of Go types: a wrong value is named by its path
// ("web.backlog: line 11: want an integer, got `x`"), an unknown key by the
// mapping it is in and the keys that mapping takes ("line 11: unknown field
// "backlogg" in web; want one of: pageDemand, ..."). A document with nothing
// in it gives an error that wraps io.EOF, for the caller to say what the file
// should hold.
func DecodeYAML(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	if errors.Is(err, io.EOF) {
		return err
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return errors.New(Escape(err.Error()))
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) != nil {
		return YAMLError(err)
	}
	types := structTypes(reflect.TypeOf(v))
	msgs := make([]string, len(te.Errors))
	for i, e := range te.Errors {
		msgs[i] = Escape(explain(e, &root, types))
	}
	return errors.New(strings.Join(msgs, "; "))
}

var (
	// yaml.v3's own wording, which names Go types.
	unknownField = regexp.MustCompile(`^line ([0-9]+): field (.*) not found in type (\S+)$`)
	cannotInto   = regexp.MustCompile("^line ([0-9]+): cannot unmarshal (!!\\w+)( `(.*)`)? into (\\S+)$") // a backquote inside: no raw string
	atLine       = regexp.MustCompile(`^line ([0-9]+): `)
)

// explain rewrites one of yaml.v3's type errors. root is the document and
// types the structs it decodes into, by Go name; either may be nil.
func explain(msg string, root *yaml.Node, types map[string]reflect.Type) string {
	if m := unknownField.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		out := fmt.Sprintf("line %d: unknown field %q", line, m[2])
		if root != nil {
			if p, ok := parentPath(root, line, m[2], ""); ok {
				if p == "" {
					p = "the top level"
				}
				out += " in " + p
			}
		}
		if t, ok := types[m[3]]; ok {
			if names := fieldNames(t); len(names) > 0 {
				out += "; want one of: " + strings.Join(names, ", ")
			}
		}
		return out
	}
	line := 0
	if m := atLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	if m := cannotInto.FindStringSubmatch(msg); m != nil {
		got := m[3]
		switch m[2] {
		case "!!seq":
			got = "a list"
		case "!!map":
			got = "a mapping"
		case "!!null":
			got = "nothing"
		}
		msg = fmt.Sprintf("line %d: want %s, got %s", line, kindOf(m[5], types), strings.TrimSpace(got))
		if root != nil {
			if p := pathAt(root, line, m[2], m[4]); p != "" {
				msg = p + ": " + msg
			}
		}
		return msg
	}
	if line > 0 && root != nil {
		if p := pathAt(root, line, "", ""); p != "" {
			return p + ": " + msg
		}
	}
	return msg
}

// YAMLError makes a decoding error one line: yaml.v3 puts each type error
// on a line of its own and leaves a quoted key's newline in "field a\nb not
// found". Without the document, Go type names are dropped rather than
// explained (DecodeYAML explains them).
func YAMLError(err error) error {
	msgs := []string{err.Error()}
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msgs = te.Errors
	}
	for i, m := range msgs {
		if te != nil {
			m = explain(m, nil, nil)
		}
		msgs[i] = Escape(m)
	}
	return errors.New(strings.Join(msgs, "; "))
}

// structTypes maps the Go name of every struct type reachable from t to the
// type, as yaml.v3 names them in its messages.
func structTypes(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct {
			return
		}
		if _, seen := out[t.String()]; seen {
			return
		}
		out[t.String()] = t
		for i := range t.NumField() {
			walk(t.Field(i).Type)
		}
	}
	walk(t)
	return out
}

// fieldNames lists the keys yaml.v3 accepts for a struct, in field order:
// the yaml tag's name, else the lowercased field name; inline structs are
// flattened. Nil when an inline map takes any key.
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if strings.Contains(","+opts+",", ",inline,") {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() != reflect.Struct {
				return nil
			}
			names = append(names, fieldNames(ft)...)
			continue
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		names = append(names, name)
	}
	return names
}

// kindOf says what a Go type (by yaml.v3's name for it) wants in YAML.
func kindOf(name string, types map[string]reflect.Type) string {
	switch {
	case strings.HasPrefix(name, "[]") || strings.HasPrefix(name, "["):
		return "a list"
	case strings.HasPrefix(name, "map["):
		return "a mapping"
	case name == "bool":
		return "true or false"
	case name == "string":
		return "a string"
	case strings.HasPrefix(name, "uint"):
		return "an integer >= 0"
	case strings.HasPrefix(name, "int"):
		return "an integer"
	case strings.HasPrefix(name, "float"):
		return "a number"
	case name == "time.Duration":
		return "a duration like 2.5s"
	}
	if t, ok := types[name]; ok {
		if names := fieldNames(t); len(names) > 0 {
			return "a mapping of " + strings.Join(names, ", ")
		}
		return "a mapping"
	}
	return "another kind of value"
}

// parentPath finds the mapping that holds key on line and returns its
// dotted path ("" for the top level). Aliases are not followed: the key is
// found where its anchor defines it.
func parentPath(n *yaml.Node, line int, key, prefix string) (string, bool) {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if p, ok := parentPath(c, line, key, prefix); ok {
				return p, true
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Line == line && k.Value == key {
				return prefix, true
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if p, ok := parentPath(n.Content[i+1], line, key, join(prefix, n.Content[i].Value)); ok {
				return p, true
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if p, ok := parentPath(c, line, key, fmt.Sprintf("%s[%d]", prefix, i)); ok {
				return p, true
			}
		}
	}
	return "", false
}

// pathAt is the dotted path of the mapping key or list item on line; with
// several on the line (flow style), the first whose value is what the error
// names (tag and value; yaml.v3 shortens long values to 7 bytes and "..."),
// else the first.
func pathAt(n *yaml.Node, line int, tag, value string) string {
	var first, match string
	matches := func(v *yaml.Node) bool {
		switch tag {
		case "":
			return false
		case "!!seq":
			return v.Kind == yaml.SequenceNode
		case "!!map":
			return v.Kind == yaml.MappingNode
		}
		if v.Kind != yaml.ScalarNode {
			return false
		}
		if short, ok := strings.CutSuffix(value, "..."); ok {
			return strings.HasPrefix(v.Value, short)
		}
		return v.Value == value
	}
	found := func(path string, v *yaml.Node) {
		if first == "" {
			first = path
		}
		if match == "" && matches(v) {
			match = path
		}
	}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		switch n.Kind {
		case yaml.DocumentNode:
			for _, c := range n.Content {
				walk(c, prefix)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				path := join(prefix, k.Value)
				walk(v, path)
				if k.Line == line || v.Line == line {
					found(path, v)
				}
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				path := fmt.Sprintf("%s[%d]", prefix, i)
				walk(c, path)
				if c.Line == line {
					found(path, c)
				}
			}
		}
	}
	walk(n, "")
	if match != "" {
		return match
	}
	return first
}

func join(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}
