package identity

import (
	"crypto/sha256"
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// The verification cache held verified peers and certificates that failed
// to verify in one map of 4,096, emptied when full: a flood of distinct
// certificates that do not verify (any client may present one; the TLS
// handshake takes it) emptied it, and every honest peer verified its
// chain again, about 70 µs a request instead of 1; and with more
// identities than 4,096 (a 10,000-node control plane) the cache emptied
// itself under honest traffic alone, so that nearly every request
// verified. Verified peers now have a cache of their own, room for
// 65,536 certificates, which makes room by dropping stale entries first
// and then an eighth, never all at once; failures are cached apart.
func TestVerificationCacheKeepsHonestPeers(t *testing.T) {
	ca, creds, _ := serverCredentials(t, "cache-test")
	// variants returns n certificates that differ in their bytes (and so
	// in their cache key) and verify as the one issued for spec by ca.
	variants := func(ca *certs.CA, spec certs.Spec, n int) [][]*x509.Certificate {
		leaf, err := x509.ParseCertificate(ca.MustIssue(spec).Certificate[0])
		require.NoError(t, err)
		out := make([][]*x509.Certificate, n)
		for i := range out {
			c := *leaf
			c.Raw = append([]byte{byte(i >> 16), byte(i >> 8), byte(i)}, leaf.Raw...)
			out[i] = []*x509.Certificate{&c}
		}
		return out
	}
	cached := func(chain []*x509.Certificate) bool {
		creds.cacheMu.Lock()
		defer creds.cacheMu.Unlock()
		v := creds.verified[sha256.Sum256(chain[0].Raw)]
		return v != nil && v.err == nil
	}

	// More honest peers than the old cache held stay cached together.
	honest := variants(ca, certs.Spec{Component: "kubelet", Name: "node"}, 4200)
	for _, chain := range honest {
		_, err := creds.Verify(chain)
		require.NoError(t, err)
	}
	for i, chain := range honest {
		require.True(t, cached(chain), "honest peer %d was dropped from the cache", i)
	}

	// Certificates that do not verify, however many, drop none of them.
	stranger, err := certs.NewCA("stranger")
	require.NoError(t, err)
	for _, chain := range variants(stranger, certs.Spec{Component: "kubelet", Name: "evil"}, 4200) {
		_, err := creds.Verify(chain)
		require.Equal(t, apierror.CodeUnauthenticated, apierror.CodeOf(err))
	}
	for i, chain := range honest {
		require.True(t, cached(chain), "honest peer %d was dropped from the cache by certificates that do not verify", i)
	}
}

// A certificate that verified under the old CA bundle and does not under
// the new one is refused from the refusals' cache, not verified again on
// every request behind its stale entry among the verified.
func TestVerificationCacheRemembersARefusalAfterRotation(t *testing.T) {
	ca, creds, dir := serverCredentials(t, "rotation-old")
	leaf, err := x509.ParseCertificate(ca.MustIssue(certs.Spec{Component: "kubelet", Name: "node"}).Certificate[0])
	require.NoError(t, err)
	chain := []*x509.Certificate{leaf}
	key := sha256.Sum256(leaf.Raw)
	_, err = creds.Verify(chain)
	require.NoError(t, err)

	newCA, err := certs.NewCA("rotation-new")
	require.NoError(t, err)
	_, _, _, err = newCA.WriteFiles(dir, "nc", newCA.MustIssue(certs.Spec{Component: "nodecontroller", Server: true}))
	require.NoError(t, err)
	require.NoError(t, creds.Reload())
	_, err = creds.Verify(chain)
	require.Equal(t, apierror.CodeUnauthenticated, apierror.CodeOf(err))

	creds.cacheMu.Lock()
	_, stale := creds.verified[key]
	refusal := creds.refused[key]
	creds.cacheMu.Unlock()
	require.False(t, stale, "the verification under the old bundle is still cached")
	require.NotNil(t, refusal, "the refusal is not cached")
	_, err = creds.Verify(chain)
	require.Equal(t, apierror.CodeUnauthenticated, apierror.CodeOf(err), "refused again from the cache")
}

// serverCredentials loads a server's credentials issued by a new CA named
// name, from files in the folder it returns.
func serverCredentials(t *testing.T, name string) (*certs.CA, *Credentials, string) {
	t.Helper()
	ca, err := certs.NewCA(name)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile, caFile, err := ca.WriteFiles(dir, "nc", ca.MustIssue(certs.Spec{Component: "nodecontroller", Server: true}))
	require.NoError(t, err)
	creds, err := Load(Files{CertFile: certFile, KeyFile: keyFile, CAFile: caFile})
	require.NoError(t, err)
	return ca, creds, dir
}
