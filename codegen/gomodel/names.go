package gomodel

import (
	"strconv"
	"strings"
	"unicode"
)

// initialisms are written in capitals in Go names, as golint asks.
var initialisms = map[string]bool{
	"ACL": true, "API": true, "ASCII": true, "CPU": true, "CSS": true, "DNS": true, "EOF": true, "GUID": true,
	"HTML": true, "HTTP": true, "HTTPS": true, "ID": true, "IP": true, "JSON": true, "LHS": true, "QPS": true,
	"RAM": true, "RHS": true, "RPC": true, "SLA": true, "SMTP": true, "SQL": true, "SSH": true, "TCP": true,
	"TLS": true, "TTL": true, "UDP": true, "UI": true, "UID": true, "UUID": true, "URI": true, "URL": true,
	"UTF8": true, "VM": true, "XML": true, "XMPP": true, "XSRF": true, "XSS": true, "CIDR": true, "OS": true,
	// Resource names beside CPU, so that an enum of them reads alike.
	"GPU": true, "TPU": true,
}

// words splits a name at non-alphanumerics and at case changes:
// "machineID" → machine ID, "HTTPServer" → HTTP Server, "pod_ip" → pod ip.
func words(s string) []string {
	var out []string
	rs := []rune(s)
	start := -1
	flush := func(end int) {
		if start >= 0 && end > start {
			out = append(out, string(rs[start:end]))
		}
		start = -1
	}
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush(i)
			continue
		}
		if start < 0 {
			start = i
			continue
		}
		prev := rs[i-1]
		switch {
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush(i)
			start = i
		case unicode.IsUpper(r) && unicode.IsDigit(prev):
			flush(i)
			start = i
		case unicode.IsLower(r) && unicode.IsUpper(prev) && i-1 > start:
			// "HTTPServer": the last capital starts the next word
			flush(i - 1)
			start = i - 1
		}
	}
	flush(len(rs))
	return out
}

// GoName turns a JSON name into an exported Go identifier.
func GoName(s string) string {
	var b strings.Builder
	for _, w := range words(s) {
		up := strings.ToUpper(w)
		if initialisms[up] {
			b.WriteString(up)
			continue
		}
		rs := []rune(w)
		b.WriteRune(unicode.ToUpper(rs[0]))
		b.WriteString(string(rs[1:]))
	}
	name := b.String()
	if name == "" {
		return "Empty"
	}
	if r := []rune(name)[0]; !unicode.IsLetter(r) || r > unicode.MaxASCII {
		name = "X" + name
	}
	return asciiOnly(name)
}

// asciiOnly keeps a name ASCII so that it is easy to type and grep.
func asciiOnly(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r <= unicode.MaxASCII {
			b.WriteRune(r)
		} else {
			b.WriteString("U" + strconv.FormatInt(int64(r), 16))
		}
	}
	return b.String()
}

// nameSet hands out unique names.
type nameSet map[string]bool

// unique returns base, or base2, base3, … when taken, and takes it.
func (s nameSet) unique(base string) string {
	name := base
	for i := 2; s[name]; i++ {
		name = base + strconv.Itoa(i)
	}
	s[name] = true
	return name
}

// ReservedNames are the package-level names generated code declares besides
// message types; a type that would take one gets a suffix instead.
var ReservedNames = []string{"Contract", "Client", "Server", "NewClient", "Register"}
