package suite

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/lockstep-dev/lockstep/bench/internal/scratch"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
)

// trust is the mutual TLS of the suite's second rows: a throwaway CA
// (ECDSA P-256, made in memory when a workload starts), a server
// certificate for 127.0.0.1 naming the nodecontroller, and a client
// certificate naming a kubelet, both sides presenting theirs and checking
// the other's. lockstep's credentials are read from files, as a cluster
// mounts them, so the material is also written to a temporary folder,
// removed by close (or when the run is interrupted: package scratch); the anchors take the same certificates as tls.Configs.
type trust struct {
	dir string
	// server and client are lockstep's credentials (ServerConfig.MTLS, and
	// Credentials.Transport for a client).
	server, client *framework.Credentials
	// serverTLS requires and verifies a client certificate from the CA;
	// clientTLS presents the client certificate and trusts only the CA.
	serverTLS, clientTLS *tls.Config
}

func newTrust() (t *trust, err error) {
	ca, err := certs.NewCA("lockstep bench CA")
	if err != nil {
		return nil, err
	}
	srvCert, err := ca.Issue(certs.Spec{Component: "nodecontroller", Name: "bench", Server: true, Lifetime: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	cliCert, err := ca.Issue(certs.Spec{Component: "kubelet", Name: "bench", Lifetime: 24 * time.Hour})
	if err != nil {
		return nil, err
	}
	dir, err := scratch.Dir("tls")
	if err != nil {
		return nil, err
	}
	t = &trust{dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, t.close())
			t = nil
		}
	}()
	if t.server, err = writeCredentials(ca, dir, trustServer, srvCert); err != nil {
		return nil, err
	}
	if t.client, err = writeCredentials(ca, dir, trustClient, cliCert); err != nil {
		return nil, err
	}
	pool := ca.Pool()
	t.serverTLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{srvCert},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	// A session cache, as lockstep's client keeps one: a reconnect resumes
	// instead of signing and verifying again.
	t.clientTLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cliCert}, RootCAs: pool,
		ClientSessionCache: tls.NewLRUClientSessionCache(256)}
	return t, nil
}

// The bases of a trust's files in its folder: <base>.crt, <base>.key and
// the CA's ca.crt.
const (
	trustServer = "server"
	trustClient = "client"
)

func writeCredentials(ca *certs.CA, dir, base string, cert tls.Certificate) (*framework.Credentials, error) {
	if _, _, _, err := ca.WriteFiles(dir, base, cert); err != nil {
		return nil, err
	}
	return childCredentials(dir, base)
}

// childCredentials loads the credentials of one side of the trust in dir:
// a server process started with -tls loads the server's, a process of
// sessions the client's.
func childCredentials(dir, base string) (*framework.Credentials, error) {
	return framework.LoadCredentials(framework.MTLSFiles{CertFile: filepath.Join(dir, base+".crt"),
		KeyFile: filepath.Join(dir, base+".key"), CAFile: filepath.Join(dir, "ca.crt")})
}

// close removes the material's folder.
func (t *trust) close() error { return scratch.Remove(t.dir) }

// serverConfig is the suite's nodecontroller (serverConfig) under mutual TLS.
func (t *trust) serverConfig() framework.ServerConfig {
	cfg := serverConfig()
	cfg.MTLS = t.server
	return cfg
}

// lockstepClient configures a client for mutual TLS: the credentials'
// transport, which presents the kubelet's certificate.
func (t *trust) lockstepClient(c *framework.ClientConfig) { c.Transport = t.client.Transport("") }

// grpcServerOption makes a gRPC server require mutual TLS.
func (t *trust) grpcServerOption() grpc.ServerOption {
	return grpc.Creds(credentials.NewTLS(t.serverTLS))
}

// grpcDialOption makes a ClientConn dial with mutual TLS.
func (t *trust) grpcDialOption() grpc.DialOption {
	return grpc.WithTransportCredentials(credentials.NewTLS(t.clientTLS))
}

// httpClient is httpClient (the net/http and connect-go anchors' tuned
// client) dialling with mutual TLS: HTTP/1.1 keep-alive, as in plaintext.
func (t *trust) httpClient() *http.Client {
	hc := httpClient()
	hc.Transport.(*http.Transport).TLSClientConfig = t.clientTLS
	return hc
}

// refusesAnonymous checks the premise of the mutual-TLS rows on every run:
// a peer that trusts the CA but presents no certificate gets nothing. The
// gRPC and net/http anchors fail its TLS handshake (tlsAddrs); lockstep
// completes it, so that probes reach /healthz, and refuses every other
// entry unauthenticated (lockstepURL's status page here).
func (t *trust) refusesAnonymous(lockstepURL string, tlsAddrs ...string) error {
	anon := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: t.clientTLS.RootCAs}
	for _, addr := range tlsAddrs {
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, anon)
		if err == nil {
			// Under TLS 1.3 the server's refusal arrives after the
			// client's side of the handshake: on the first read.
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Read(make([]byte, 1))
			_ = c.Close()
		}
		if err == nil || !strings.Contains(err.Error(), "certificate required") {
			return fmt.Errorf("%s served a peer without a client certificate (%v)", addr, err)
		}
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: anon}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get(lockstepURL + "/lockstep/status")
	if err != nil {
		return fmt.Errorf("lockstep with mutual TLS: %w", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		return fmt.Errorf("lockstep with mutual TLS answered a peer without a certificate %s, want 401", resp.Status)
	}
	return nil
}
