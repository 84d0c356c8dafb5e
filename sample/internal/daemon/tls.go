package daemon

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/lockstep-dev/lockstep/framework"
)

// tlsConfigs loads the certificate and CA of the flags: the server side
// verifies client certificates from the CA when one is given (required on
// the lockstep paths by [requireClientCert], optional elsewhere so that
// probes and scrapers need none); the client side presents the
// certificate and trusts the CA, or else the system's roots.
func (f *Flags) tlsConfigs() (server, client *tls.Config, err error) {
	if !f.TLS() {
		return nil, nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.TLSCert, f.TLSKey)
	if err != nil {
		return nil, nil, fmt.Errorf("--tls-cert/--tls-key: %w", err)
	}
	server = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	client = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12, ServerName: f.TLSServerName}
	if f.TLSCA != "" {
		pem, err := os.ReadFile(f.TLSCA)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, fmt.Errorf("--tls-ca %s: no PEM certificate in it", f.TLSCA)
		}
		server.ClientCAs, server.ClientAuth = pool, tls.VerifyClientCertIfGiven
		client.RootCAs = pool
	}
	return server, client, nil
}

// requireClientCert guards the lockstep protocol when client certificates
// are checked: a request under /lockstep/ must come with a verified
// certificate whose common name is one of the components allowed to call
// this server, so a certificate stands for a component. Other paths
// (/healthz, /readyz, /metrics) stay open to probes and scrapers.
func requireClientCert(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/lockstep/") {
			next.ServeHTTP(w, r)
			return
		}
		var name string
		if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 {
			name = r.TLS.VerifiedChains[0][0].Subject.CommonName
		}
		if !slices.Contains(allowed, name) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			msg := fmt.Sprintf("a client certificate naming one of %s is required; got %q", strings.Join(allowed, ", "), name)
			_ = json.NewEncoder(w).Encode(map[string]string{"code": string(framework.CodeUnauthenticated), "message": msg})
			return
		}
		next.ServeHTTP(w, r)
	})
}
