package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"unicode/utf8"
)

// writeYAML writes JSON text as YAML in block style, streaming: it walks
// the JSON's tokens once and holds only the path to the current value, so
// its memory does not grow with the document. A general YAML encoder of a
// decoded document (go.yaml.in/yaml/v3 of a map[string]any) took 3.7 GB to
// print a 16 MiB status of 131,070 small sessions; the JSON a status is
// needs none of YAML's generality. Members keep the JSON's order. A string
// is written plain when YAML reads it back as that string (a name, a
// version), else double-quoted with JSON's escapes, which are YAML's too.
func writeYAML(w io.Writer, data []byte) error {
	bw := bufio.NewWriter(w)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	y := &yamlWriter{w: bw, dec: dec}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if err := y.value(tok, 0, true); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("yaml: trailing data after the JSON value")
	}
	return bw.Flush()
}

type yamlWriter struct {
	w   *bufio.Writer
	dec *json.Decoder
	err error
}

func (y *yamlWriter) write(s ...string) {
	for _, p := range s {
		if y.err == nil {
			_, y.err = y.w.WriteString(p)
		}
	}
}

// value writes the value starting with tok. At top level (or as a
// sequence item's first line) a container starts on the current line;
// otherwise a non-empty container starts on the next line, indented.
func (y *yamlWriter) value(tok json.Token, indent int, inline bool) error {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return y.object(indent, inline)
		case '[':
			return y.array(indent, inline)
		}
		return fmt.Errorf("yaml: unexpected %v", t)
	default:
		y.write(scalar(t), "\n")
	}
	return y.err
}

func (y *yamlWriter) object(indent int, inline bool) error {
	if !y.dec.More() {
		if _, err := y.dec.Token(); err != nil {
			return err
		}
		if !inline {
			y.write(" ")
		}
		y.write("{}\n")
		return y.err
	}
	pad := strings.Repeat("  ", indent)
	first := true
	if !inline {
		y.write("\n")
	}
	for y.dec.More() {
		kt, err := y.dec.Token()
		if err != nil {
			return err
		}
		key, ok := kt.(string)
		if !ok {
			return fmt.Errorf("yaml: object key %v", kt)
		}
		if !(first && inline && indent > 0) {
			y.write(pad)
		}
		first = false
		y.write(yamlString(key), ":")
		vt, err := y.dec.Token()
		if err != nil {
			return err
		}
		if d, ok := vt.(json.Delim); ok && (d == '{' || d == '[') {
			if err := y.value(vt, indent+1, false); err != nil {
				return err
			}
			continue
		}
		y.write(" ")
		if err := y.value(vt, indent+1, true); err != nil {
			return err
		}
	}
	_, err := y.dec.Token() // '}'
	if err != nil {
		return err
	}
	return y.err
}

func (y *yamlWriter) array(indent int, inline bool) error {
	if !y.dec.More() {
		if _, err := y.dec.Token(); err != nil {
			return err
		}
		if !inline {
			y.write(" ")
		}
		y.write("[]\n")
		return y.err
	}
	if !inline {
		y.write("\n")
	}
	pad := strings.Repeat("  ", indent)
	for y.dec.More() {
		t, err := y.dec.Token()
		if err != nil {
			return err
		}
		y.write(pad, "- ")
		if d, ok := t.(json.Delim); ok && d == '{' {
			// The object's first member on the dash's line, the
			// others under it.
			if err := y.object(indent+1, true); err != nil {
				return err
			}
			continue
		}
		if d, ok := t.(json.Delim); ok && d == '[' {
			if !y.dec.More() {
				_, _ = y.dec.Token()
				y.write("[]\n")
				continue
			}
			if err := y.array(indent+1, false); err != nil {
				return err
			}
			continue
		}
		if err := y.value(t, indent+1, true); err != nil {
			return err
		}
	}
	_, err := y.dec.Token() // ']'
	if err != nil {
		return err
	}
	return y.err
}

func scalar(t json.Token) string {
	switch v := t.(type) {
	case nil:
		return "null"
	case bool:
		if v {
			return "true"
		}
		return "false"
	case json.Number:
		return v.String()
	case string:
		return yamlString(v)
	}
	return fmt.Sprint(t)
}

// plainSafe are strings YAML reads back, unquoted, as the same string:
// names, versions, paths, URLs. A leading digit, sign or dot could be a
// number, and the words below booleans or null, so those are quoted.
var plainSafe = regexp.MustCompile(`^[A-Za-z_/][A-Za-z0-9_./+-]*(:[A-Za-z0-9_./+-]+)*$`)

var yamlWords = map[string]bool{
	"y": true, "n": true, "yes": true, "no": true, "on": true, "off": true,
	"true": true, "false": true, "null": true, "nan": true, "inf": true,
}

// yamlString writes s plain when that is safe, else double-quoted, with
// every character a terminal or a YAML reader would not take as it is
// escaped (\n, \", \u009b, \U000e0001; bytes that are not UTF-8 as
// U+FFFD, as JSON reads them).
func yamlString(s string) string {
	if plainSafe.MatchString(s) && !yamlWords[strings.ToLower(s)] && !strings.Contains(s, "://") {
		return s
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for _, r := range s { // an invalid byte ranges as U+FFFD
		switch {
		case r == '"' || r == '\\':
			b = append(b, '\\', byte(r))
		case r == '\n':
			b = append(b, `\n`...)
		case r == '\t':
			b = append(b, `\t`...)
		case safeRune(r):
			b = utf8.AppendRune(b, r)
		case r > 0xffff:
			b = fmt.Appendf(b, `\U%08x`, r)
		default:
			b = fmt.Appendf(b, `\u%04x`, r)
		}
	}
	return string(append(b, '"'))
}

// writeIndentedJSON writes compact JSON text (as json.Marshal makes it)
// indented by two spaces, as json.Encoder with SetIndent("", "  ") does,
// streaming: json.Encoder holds the whole document twice over (encoded,
// then indented) before it writes a byte.
func writeIndentedJSON(w io.Writer, compact []byte) error {
	bw := bufio.NewWriter(w)
	depth := 0
	newline := func() {
		_ = bw.WriteByte('\n')
		for range depth {
			_, _ = bw.WriteString("  ")
		}
	}
	inString, escaped := false, false
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		switch {
		case escaped:
			escaped = false
		case inString:
			switch c {
			case '\\':
				escaped = true
			case '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			_ = bw.WriteByte(c)
			if i+1 < len(compact) && (compact[i+1] == '}' || compact[i+1] == ']') {
				i++
				_ = bw.WriteByte(compact[i])
				continue
			}
			depth++
			newline()
			continue
		case c == '}' || c == ']':
			depth--
			newline()
		case c == ',':
			_ = bw.WriteByte(c)
			newline()
			continue
		case c == ':':
			_, _ = bw.WriteString(": ")
			continue
		}
		if err := bw.WriteByte(c); err != nil {
			return err
		}
	}
	_ = bw.WriteByte('\n')
	return bw.Flush()
}
