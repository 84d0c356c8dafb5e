package framework

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// MTLSFiles names the PEM files mutual TLS is built from: the component's
// own certificate and key (presented to clients as a server, and to servers
// as a client) and the CA bundle the other side's certificate must chain
// to. The files are read again when they change, so a rotated certificate
// (a cert-manager Secret updated in its volume) takes effect without a
// restart.
type MTLSFiles struct {
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

// Credentials is mutual TLS material loaded from [MTLSFiles], reloaded as
// the files change. Pass it as ServerConfig.MTLS, and use
// [Credentials.Transport] (or [Credentials.ClientTLS]) on the client side.
type Credentials struct {
	files MTLSFiles

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

// verification is one cached result of verifyPeer.
type verification struct {
	generation uint64
	notAfter   time.Time
	peer       Peer
	err        error
}

// verifyCacheCap bounds the verified peers cached: room for the
// identities of a 10,000-node control plane several times over (each
// with its certificate and, while it rotates, the next), since a peer
// dropped verifies its chain again on its next request. refusedCacheCap
// bounds the certificates cached as not verifying; that cache is emptied
// when full.
const (
	verifyCacheCap  = 1 << 16
	refusedCacheCap = 4096
)

// LoadCredentials reads the files once, failing on anything unreadable, and
// returns credentials that reload them as they change. A later reload that
// fails keeps the last good material and logs nothing itself: the error is
// returned by [Credentials.Reload] and shown by [Credentials.Err].
func LoadCredentials(files MTLSFiles) (*Credentials, error) {
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
// [Credentials.verifyPeer].
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
// same material. Use [Credentials.Transport] to
// follow a rotated CA bundle as well.
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

// Transport returns a client transport ([NewTransport]'s pool) that dials
// each new connection with the current certificate and CA bundle, verifying
// the server's certificate against serverName, or MTLSFiles.ServerName, or
// else the host dialled. Share it among a process's clients of one peer as
// ClientConfig.Transport.
func (c *Credentials) Transport(serverName string) *http.Transport {
	t := NewTransport(nil)
	dial := t.DialContext // the default's, which watches for a peer's close
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
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
	return t
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

// OperatorOnly serves next only to operator identities (MTLSFiles.Operators)
// with a verified certificate: others get permission_denied, requests
// without a certificate unauthenticated. A lockstep server applies it to its
// status page, metrics and [Server.Handle] routes itself; a binary serving
// such pages on a server of its own wraps them with it.
func (c *Credentials) OperatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := c.operator(r)
		if err != nil {
			writeRefusal(w, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(withPeer(r.Context(), p)))
	})
}

// operator returns the request's peer if it is an operator identity.
func (c *Credentials) operator(r *http.Request) (*Peer, error) {
	if r.TLS == nil {
		return nil, Errorf(CodeUnauthenticated, "mutual TLS is required")
	}
	p, err := c.verifyCached(r.TLS.PeerCertificates)
	if err != nil {
		return nil, err
	}
	if !c.isOperator(p.Identity) {
		return nil, Errorf(CodePermissionDenied, "%s is not an operator identity", p.Identity)
	}
	return p, nil
}

// verifyPeer checks a client's certificate chain against the current CA
// bundle, for client authentication, at the current time, and reads the
// identity it names. It returns unauthenticated for no certificate, one
// that does not chain to the CA, or one outside its validity period.
func (c *Credentials) verifyPeer(chain []*x509.Certificate) (Identity, *x509.Certificate, error) {
	if len(chain) == 0 {
		return Identity{}, nil, Errorf(CodeUnauthenticated, "a client certificate is required")
	}
	_, pool, _ := c.current()
	opts := x509.VerifyOptions{
		Roots:         pool,
		Intermediates: x509.NewCertPool(),
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	for _, cert := range chain[1:] {
		opts.Intermediates.AddCert(cert)
	}
	if _, err := chain[0].Verify(opts); err != nil {
		return Identity{}, nil, Errorf(CodeUnauthenticated, "client certificate does not verify: %v", err)
	}
	id, err := IdentityFromCertificate(chain[0])
	if err != nil {
		return Identity{}, nil, Errorf(CodeUnauthenticated, "client certificate: %v", err)
	}
	return id, chain[0], nil
}

// verifyCached is verifyPeer through the cache.
func (c *Credentials) verifyCached(chain []*x509.Certificate) (*Peer, error) {
	if len(chain) == 0 {
		return nil, Errorf(CodeUnauthenticated, "a client certificate is required")
	}
	key := sha256.Sum256(chain[0].Raw)
	_, _, gen := c.current()
	now := time.Now()
	c.cacheMu.Lock()
	v := c.verified[key]
	if v == nil {
		v = c.refused[key]
	}
	c.cacheMu.Unlock()
	if v == nil || v.generation != gen || now.After(v.notAfter) || now.Before(chain[0].NotBefore) {
		id, cert, err := c.verifyPeer(chain)
		v = &verification{generation: gen, notAfter: chain[0].NotAfter, err: err,
			peer: Peer{Identity: id, Authenticated: err == nil, Certificate: cert}}
		c.cacheMu.Lock()
		c.rememberLocked(key, v, gen, now)
		c.cacheMu.Unlock()
	}
	if v.err != nil {
		return nil, v.err
	}
	p := v.peer
	return &p, nil
}

// rememberLocked caches v, the verification of the certificate whose
// hash is key against CA bundle gen at now. A full cache of verified peers
// makes room by dropping the entries of an earlier bundle or an expired
// certificate, then arbitrary ones (a map's order) down to seven eighths:
// room is made once for many certificates, and never by making every
// peer verify again at once. cacheMu must be held.
func (c *Credentials) rememberLocked(key [32]byte, v *verification, gen uint64, now time.Time) {
	if v.err != nil {
		// A certificate that verified under an earlier bundle and not
		// under this one: its stale entry would be found first, and the
		// refusal never.
		delete(c.verified, key)
		if c.refused == nil || len(c.refused) >= refusedCacheCap {
			c.refused = map[[32]byte]*verification{}
		}
		c.refused[key] = v
		return
	}
	delete(c.refused, key)
	if c.verified == nil {
		c.verified = map[[32]byte]*verification{}
	}
	if len(c.verified) >= verifyCacheCap {
		for k, old := range c.verified {
			if old.generation != gen || now.After(old.notAfter) {
				delete(c.verified, k)
			}
		}
		for k := range c.verified {
			if len(c.verified) < verifyCacheCap/8*7 {
				break
			}
			delete(c.verified, k)
		}
	}
	c.verified[key] = v
}

// isOperator reports whether id may read the status page and metrics.
func (c *Credentials) isOperator(id Identity) bool {
	for _, op := range c.files.Operators {
		if id.Component == op {
			return true
		}
	}
	return false
}

// writeRefusal answers a request refused outside a server's own routes
// (Credentials.OperatorOnly) in the one error shape.
func writeRefusal(w http.ResponseWriter, err error) {
	e := asError(err)
	body, _ := json.Marshal(toWire(e))
	writeJSON(w, e.Code().HTTPStatus(), body)
}
