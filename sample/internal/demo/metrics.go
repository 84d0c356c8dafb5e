package demo

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Metrics is a scrape of a /metrics page in the Prometheus text format.
type Metrics []Sample

// Sample is one sample of a scrape.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Sum adds the values of the samples named name whose labels include all
// of match; a match value starting with "!" excludes that value instead.
func (m Metrics) Sum(name string, match map[string]string) float64 {
	total := 0.0
	for _, s := range m {
		if s.Name != name {
			continue
		}
		ok := true
		for k, v := range match {
			if not, found := strings.CutPrefix(v, "!"); found {
				ok = ok && s.Labels[k] != not
			} else {
				ok = ok && s.Labels[k] == v
			}
		}
		if ok {
			total += s.Value
		}
	}
	return total
}

// Scrape reads a /metrics page.
func Scrape(client *http.Client, url string) (Metrics, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return ParseMetrics(resp.Body)
}

// ParseMetrics reads the Prometheus text format: name{label="value",…}
// value, one sample a line; comments and timestamps are skipped.
func ParseMetrics(r io.Reader) (Metrics, error) {
	var out Metrics
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		s := Sample{Labels: map[string]string{}}
		rest := line
		if i := strings.IndexAny(line, "{ "); i >= 0 && line[i] == '{' {
			s.Name = line[:i]
			end := strings.LastIndex(line, "}")
			if end < i {
				return nil, fmt.Errorf("metrics: malformed line %q", line)
			}
			for _, pair := range splitLabels(line[i+1 : end]) {
				k, v, ok := strings.Cut(pair, "=")
				if !ok {
					return nil, fmt.Errorf("metrics: malformed label %q in %q", pair, line)
				}
				if uq, err := strconv.Unquote(v); err == nil {
					v = uq
				}
				s.Labels[k] = v
			}
			rest = strings.TrimSpace(line[end+1:])
		} else if i >= 0 {
			s.Name, rest = line[:i], strings.TrimSpace(line[i+1:])
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("metrics: no value in %q", line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("metrics: value of %q: %w", line, err)
		}
		s.Value = v
		out = append(out, s)
	}
	return out, sc.Err()
}

// splitLabels splits label pairs at the commas outside quoted values.
func splitLabels(s string) []string {
	var out []string
	inQuote, escaped, start := false, false, 0
	for i, c := range s {
		switch {
		case escaped:
			escaped = false
		case c == '\\':
			escaped = true
		case c == '"':
			inQuote = !inQuote
		case c == ',' && !inQuote:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if rest := strings.TrimSpace(s[start:]); rest != "" {
		out = append(out, rest)
	}
	return out
}

// httpClient is the client the process mode probes with.
var httpClient = &http.Client{Timeout: 2 * time.Second}
