package identity

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Files names the PEM files mutual TLS is built from: the component's
// own certificate and key (presented to clients as a server, and to servers
// as a client) and the CA bundle the other side's certificate must chain
// to. The files are read again when they change, so a rotated certificate
// (a cert-manager Secret updated in its volume) takes effect without a
// restart.
type Files struct {
	CertFile, KeyFile, CAFile string
	// ServerName is the name a client checks servers' certificates against;
	// default the host of the URL dialled.
	ServerName string
	// Operators lists the components whose identities may read a server's
	// status page and metrics (lockstep://operator/<name> by default); see
	// docs/security.md. Other authenticated peers get permission_denied
	// there.
	Operators []string
	// ReloadInterval is how often the files are checked for a change (their
	// size and modification time, then their bytes); default 10s.
	ReloadInterval time.Duration
}

// OperatorComponent is the component of the identities that may read a
// server's status and metrics under mutual TLS by default
// (lockstep://operator/<name>); see [Files.Operators].
const OperatorComponent = "operator"

// Credentials is mutual TLS material loaded from [Files], reloaded as the
// files change, with the verification of peers' certificates against it.
type Credentials struct {
	files Files

	mu         sync.Mutex
	cert       *tls.Certificate
	pool       *x509.CertPool
	generation uint64 // bumped whenever the CA bundle changes
	// sessions lets a client resume TLS sessions with the servers it
	// dialled before: a reconnect (a draining server closes every
	// connection it answers on) then costs no certificate signature or
	// verification. It is replaced whenever the material changes, so a
	// rotated certificate is presented from the next connection on.
	sessions tls.ClientSessionCache
	raw      [3][]byte
	checked  time.Time
	loadErr  error

	// verified caches verification results by the leaf certificate's
	// hash: verifying a chain costs far more than a call (about 70 µs
	// against 1), and every request of a connection carries the same
	// certificate. An entry is used only for the CA bundle it was verified
	// against and until the certificate expires. Certificates that did
	// not verify are cached apart, in refused, so that presenting ever new
	// ones (which anyone can) never drops a verified peer.
	cacheMu  sync.Mutex
	verified map[[32]byte]*verification
	refused  map[[32]byte]*verification

	// handshakes counts the TLS handshakes completed with this material,
	// by side and by whether a session was resumed; see [Credentials.Handshakes].
	handshakes [4]atomic.Uint64
}

// HandshakeCounts is how many TLS handshakes credentials completed, as a
// server and as a client, full (certificates signed and verified, a fresh
// key exchange) and resumed from a session ticket (neither). Every new
// connection costs one: a count growing with the calls rather than with
// the peers means connections are not being reused.
type HandshakeCounts struct {
	ServerFull, ServerResumed, ClientFull, ClientResumed uint64
}

const (
	serverFull = iota
	serverResumed
	clientFull
	clientResumed
)

// Handshakes returns the handshakes completed so far.
func (c *Credentials) Handshakes() HandshakeCounts {
	return HandshakeCounts{ServerFull: c.handshakes[serverFull].Load(), ServerResumed: c.handshakes[serverResumed].Load(),
		ClientFull: c.handshakes[clientFull].Load(), ClientResumed: c.handshakes[clientResumed].Load()}
}

// countHandshake returns a VerifyConnection callback counting handshakes of
// one side; it rejects nothing (verification is done elsewhere).
func (c *Credentials) countHandshake(full int) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		i := full
		if cs.DidResume {
			i++
		}
		c.handshakes[i].Add(1)
		return nil
	}
}

// Load reads the files once, failing on anything unreadable, and returns
// credentials that reload them as they change. A later reload that fails
// keeps the last good material and logs nothing itself: the error is
// returned by [Credentials.Reload] and shown by [Credentials.Err].
func Load(files Files) (*Credentials, error) {
	if files.CertFile == "" || files.KeyFile == "" || files.CAFile == "" {
		return nil, errors.New("lockstep: mutual TLS needs CertFile, KeyFile and CAFile")
	}
	if files.ReloadInterval <= 0 {
		files.ReloadInterval = 10 * time.Second
	}
	if len(files.Operators) == 0 {
		files.Operators = []string{OperatorComponent}
	}
	c := &Credentials{files: files}
	if err := c.Reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// Reload reads the files now; unchanged files cost three reads and a
// comparison. On failure the last good material stays in use.
func (c *Credentials) Reload() error {
	var raw [3][]byte
	for i, path := range []string{c.files.CertFile, c.files.KeyFile, c.files.CAFile} {
		b, err := os.ReadFile(path)
		if err != nil {
			return c.failed(fmt.Errorf("lockstep: mutual TLS: %w", err))
		}
		raw[i] = b
	}
	c.mu.Lock()
	same := bytes.Equal(raw[0], c.raw[0]) && bytes.Equal(raw[1], c.raw[1]) && bytes.Equal(raw[2], c.raw[2])
	c.checked = time.Now()
	c.mu.Unlock()
	if same {
		return nil
	}
	cert, err := tls.X509KeyPair(raw[0], raw[1])
	if err != nil {
		// A rotation writes the certificate and key one after the other:
		// a pair that does not match yet is tried again next interval.
		return c.failed(fmt.Errorf("lockstep: mutual TLS %s/%s: %w", c.files.CertFile, c.files.KeyFile, err))
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw[2]) {
		return c.failed(fmt.Errorf("lockstep: mutual TLS %s: no PEM certificate in it", c.files.CAFile))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !bytes.Equal(raw[2], c.raw[2]) {
		c.generation++
	}
	c.cert, c.pool, c.raw, c.loadErr = &cert, pool, raw, nil
	c.sessions = tls.NewLRUClientSessionCache(256)
	return nil
}

func (c *Credentials) failed(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checked = time.Now()
	c.loadErr = err
	return err
}

// Err returns the error of the last reload, or nil if it succeeded.
func (c *Credentials) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.loadErr
}

// current returns the material in use, reloading first when the interval
// has passed since the last check.
func (c *Credentials) current() (*tls.Certificate, *x509.CertPool, uint64) {
	c.mu.Lock()
	due := time.Since(c.checked) >= c.files.ReloadInterval
	c.mu.Unlock()
	if due {
		_ = c.Reload() // a failure keeps the last good material; Err shows it
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cert, c.pool, c.generation
}

// ServerTLS returns the server side's TLS configuration: it serves the
// current certificate and asks every client for one, without failing the
// TLS handshake when there is none or it does not verify, so that the
// server can answer with a coded unauthenticated error (and so that
// Kubernetes probes, which present no certificate, still reach /healthz).
// The server verifies the certificate on every lockstep entry; see
// [Credentials.Verify].
func (c *Credentials) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:       tls.VersionTLS12,
		ClientAuth:       tls.RequestClientCert,
		VerifyConnection: c.countHandshake(serverFull),
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			cert, _, _ := c.current()
			return cert, nil
		},
	}
}

// ClientTLS returns a client side's TLS configuration: it presents the
// current certificate (so a rotated one is used from the next connection),
// trusts the CA bundle as it is now, and resumes sessions made with the
// same material. Use [Credentials.DialTLS] to follow a rotated CA bundle
// as well.
func (c *Credentials) ClientTLS() *tls.Config {
	_, pool, _ := c.current()
	c.mu.Lock()
	sessions := c.sessions
	c.mu.Unlock()
	return &tls.Config{
		MinVersion:         tls.VersionTLS12,
		RootCAs:            pool,
		ServerName:         c.files.ServerName,
		ClientSessionCache: sessions,
		VerifyConnection:   c.countHandshake(clientFull),
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			cert, _, _ := c.current()
			return cert, nil
		},
	}
}

// DialFunc is a transport's dial (http.Transport's DialContext and
// DialTLSContext).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// DialTLS returns a TLS dial for a client transport: each new connection
// is dialled with dial, then its TLS handshake made with the current
// certificate and CA bundle, verifying the server's certificate against
// serverName, or Files.ServerName, or else the host dialled.
func (c *Credentials) DialTLS(serverName string, dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg := c.ClientTLS()
		if serverName != "" {
			cfg.ServerName = serverName
		}
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			cfg.ServerName = host
		}
		// Tickets are kept per address dialled, not per server name
		// alone: replicas behind one name (a headless Service, or every
		// server on 127.0.0.1) each have ticket keys of their own, and
		// one entry per name would hold the last replica's ticket only,
		// so a client of several would present each the ticket of
		// another and never resume.
		if cfg.ClientSessionCache != nil {
			cfg.ClientSessionCache = addrSessions{cache: cfg.ClientSessionCache, addr: addr}
		}
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := tls.Client(raw, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return tc, nil
	}
}

// addrSessions is a client session cache seen through one dialled
// address: its entries are the shared cache's under keys prefixed with the
// address. crypto/tls keys sessions by server name only, and checks a
// resumed session's certificate against the name as it does a new one.
type addrSessions struct {
	cache tls.ClientSessionCache
	addr  string
}

func (s addrSessions) Get(key string) (*tls.ClientSessionState, bool) {
	return s.cache.Get(s.addr + " " + key)
}

func (s addrSessions) Put(key string, cs *tls.ClientSessionState) {
	s.cache.Put(s.addr+" "+key, cs)
}

// IsOperator reports whether id may read the status page and metrics
// (Files.Operators).
func (c *Credentials) IsOperator(id Identity) bool {
	for _, op := range c.files.Operators {
		if id.Component == op {
			return true
		}
	}
	return false
}
