package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/lockstep-dev/lockstep/framework"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// connFlags are the flags every command shares: how to reach the server.
// The TLS flags are the sample binaries' (--tls-cert, --tls-key, --tls-ca,
// --tls-server-name); the certificate is the operator's identity under
// mutual TLS.
type connFlags struct {
	cert, key, ca, serverName string
	timeout                   time.Duration
	// maxBytes bounds every answer read (a watch: every frame): a server
	// is not trusted to keep its answers small.
	maxBytes int64
	// identity is what the server reads from --tls-cert, set by client;
	// nil without a certificate or when the certificate names none.
	identity *framework.Identity
}

// defaultMaxBytes is --max-bytes' default: a status of thousands of
// sessions and watchers is a few MiB.
const defaultMaxBytes = 16 << 20

func (c *connFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.cert, "tls-cert", "", "PEM client certificate: the operator's identity under mutual TLS")
	fs.StringVar(&c.key, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&c.ca, "tls-ca", "", "PEM CA bundle the server's certificate must chain to (default: the system's roots)")
	fs.StringVar(&c.serverName, "tls-server-name", "", "name to verify the server's certificate against (default: the URL's host)")
	fs.DurationVar(&c.timeout, "timeout", 10*time.Second, "bound on each request (watch: on connecting)")
	fs.Int64Var(&c.maxBytes, "max-bytes", defaultMaxBytes, "bound on the size of an answer (watch: of a frame); a larger one is an error")
}

// client returns an HTTP client configured by the flags.
func (c *connFlags) client() (*http.Client, error) {
	if (c.cert == "") != (c.key == "") {
		return nil, usageError("--tls-cert and --tls-key go together")
	}
	if c.maxBytes <= 0 {
		return nil, usageError("--max-bytes must be positive")
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: c.serverName}
	if c.cert != "" {
		cert, err := tls.LoadX509KeyPair(c.cert, c.key)
		if err != nil {
			return nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
		if cert.Leaf != nil {
			if id, err := framework.IdentityFromCertificate(cert.Leaf); err == nil {
				c.identity = &id
			}
		}
	}
	if c.ca != "" {
		pem, err := os.ReadFile(c.ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", c.ca)
		}
		cfg.RootCAs = pool
	}
	return &http.Client{Transport: framework.NewTransport(cfg)}, nil
}

// baseURL checks a component's URL and returns it without a trailing slash.
func baseURL(raw string) (string, error) {
	if !strings.HasPrefix(raw, "http://") && !strings.HasPrefix(raw, "https://") {
		return "", usageError("URL %q must start with http:// or https://", raw)
	}
	return strings.TrimRight(raw, "/"), nil
}

// answer is an HTTP answer read whole.
type answer struct {
	status int
	header http.Header
	body   []byte
}

// server is a component lockstepctl asks: its base URL, the client that
// reaches it, and the bound on the size of what it answers.
type server struct {
	hc    *http.Client
	base  string
	limit int64
}

// connect checks a component's URL and returns the server there, reached
// as the flags say, its answers bounded by --max-bytes.
func (c *connFlags) connect(rawURL string) (server, error) {
	base, err := baseURL(rawURL)
	if err != nil {
		return server{}, err
	}
	hc, err := c.client()
	if err != nil {
		return server{}, err
	}
	return server{hc: hc, base: base, limit: c.maxBytes}, nil
}

// bounded returns the same server, its answers bounded by limit bytes.
func (s server) bounded(limit int64) server {
	s.limit = limit
	return s
}

// do sends one request to path with a JSON body (or none) and reads the
// answer, of at most s.limit bytes: a longer one is an error, never a
// truncated answer.
func (s server) do(ctx context.Context, method, path string, header http.Header, body any) (answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return answer{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := readBounded(resp, s.limit)
	if err != nil {
		return answer{}, err
	}
	return answer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// errTooLarge is an answer over the bound on what lockstepctl reads.
var errTooLarge = errors.New("answer too large")

// readBounded reads an answer's body, failing on one over limit bytes
// before reading it when its Content-Length says so.
func readBounded(resp *http.Response, limit int64) ([]byte, error) {
	if resp.ContentLength > limit {
		return nil, fmt.Errorf("%w: %s %s says %d bytes, over --max-bytes %d", errTooLarge,
			resp.Request.Method, resp.Request.URL.Path, resp.ContentLength, limit)
	}
	size := 512
	if resp.ContentLength > 0 {
		size = int(resp.ContentLength) + 1
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	n, err := buf.ReadFrom(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if n > limit {
		return nil, fmt.Errorf("%w: %s %s is over --max-bytes %d", errTooLarge, resp.Request.Method, resp.Request.URL.Path, limit)
	}
	if containers, most := jsonContainers(buf.Bytes()), limit/bytesPerContainer; containers > most {
		return nil, fmt.Errorf("%w: %s %s holds %d JSON objects and arrays in %d bytes, over the %d --max-bytes %d allows",
			errTooLarge, resp.Request.Method, resp.Request.URL.Path, containers, n, most, limit)
	}
	return buf.Bytes(), nil
}

// bytesPerContainer bounds how densely an answer may pack JSON objects and
// arrays: one per 64 bytes of --max-bytes (262,144 at the default). A
// bound on bytes alone bounds nothing once decoded: "{}," is three bytes
// and a status session some hundreds of bytes of Go values, so a 16 MiB
// status of empty sessions took 2.8 GB and 97 s to print as a table. The
// status of a real server spends over a hundred bytes on each object (a
// session with its peer is two objects in some two hundred bytes).
const bytesPerContainer = 64

// jsonContainers counts the objects and arrays in JSON text, outside its
// strings, without decoding it.
func jsonContainers(b []byte) int64 {
	var n int64
	inString, escaped := false, false
	for _, c := range b {
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
			n++
		}
	}
	return n
}

// wireError is the lockstep error shape.
type wireError struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Details json.RawMessage `json:"details"`
}

// serverError is a non-2xx answer: what was asked, the HTTP status, and
// the lockstep error's code and message where the body is one.
type serverError struct {
	what, code, message string
	status              int
}

func (e *serverError) Error() string {
	if e.code != "" {
		return fmt.Sprintf("%s: %s (%d): %s", e.what, cell(e.code), e.status, text(e.message))
	}
	return fmt.Sprintf("%s: HTTP %d: %s", e.what, e.status, e.message)
}

// codeOf returns the lockstep code of a server's error answer, or "".
func codeOf(err error) string {
	var se *serverError
	if errors.As(err, &se) {
		return se.code
	}
	return ""
}

// errorOf turns a non-2xx answer into an error naming its code.
func errorOf(a answer, what string) error {
	var w wireError
	if json.Unmarshal(a.body, &w) == nil && w.Code != "" {
		return &serverError{what: what, code: w.Code, message: w.Message, status: a.status}
	}
	return &serverError{what: what, status: a.status, message: clipQuote(strings.TrimSpace(string(a.body)), 512)}
}

// fetchStatus reads a component's status.
func fetchStatus(ctx context.Context, srv server) (framework.ServerStatus, error) {
	var st framework.ServerStatus
	a, err := srv.do(ctx, http.MethodGet, protocol.PathStatus, nil, nil)
	if err != nil {
		return st, err
	}
	if a.status != http.StatusOK {
		return st, errorOf(a, "status")
	}
	if err := json.Unmarshal(a.body, &st); err != nil {
		return st, fmt.Errorf("status is not lockstep's status JSON: %w", err)
	}
	if st.Component == "" {
		return st, errors.New("status names no component: is this a lockstep server?")
	}
	return st, nil
}
