package framework_test

import (
	"crypto/x509"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
)

func TestIdentityFromCertificate(t *testing.T) {
	ca, err := certs.NewCA("test CA")
	require.NoError(t, err)
	issued := func(spec certs.Spec) *x509.Certificate {
		c, err := ca.Issue(spec)
		require.NoError(t, err)
		return c.Leaf
	}
	uris := func(raw ...string) *x509.Certificate {
		c := &x509.Certificate{}
		for _, r := range raw {
			u, err := url.Parse(r)
			require.NoError(t, err)
			c.URIs = append(c.URIs, u)
		}
		return c
	}
	cases := []struct {
		name string
		cert *x509.Certificate
		// want is the identity read, or zero with wantErr a fragment of the
		// error.
		want    framework.Identity
		wantErr string
	}{
		{"component and name", issued(certs.Spec{Component: "kubelet", Name: "node-1"}), framework.Identity{Component: "kubelet", Name: "node-1"}, ""},
		{"component alone", issued(certs.Spec{Component: "scheduler"}), framework.Identity{Component: "scheduler"}, ""},
		{"common name alone", issued(certs.Spec{CommonName: "extender"}), framework.Identity{Component: "extender"}, ""},
		{"one bare DNS SAN", &x509.Certificate{DNSNames: []string{"kubelet"}}, framework.Identity{Component: "kubelet"}, ""},
		{"a DNS SAN with dots names nothing", &x509.Certificate{DNSNames: []string{"kubelet.lockstep.svc"}}, framework.Identity{}, "names no lockstep identity"},
		{"other URI schemes are ignored", uris("spiffe://cluster/ns/x", "lockstep://kubelet/node-2"), framework.Identity{Component: "kubelet", Name: "node-2"}, ""},
		{"two identities", uris("lockstep://kubelet/a", "lockstep://kubelet/b"), framework.Identity{}, "must name one"},
		{"a name with a slash", uris("lockstep://kubelet/a/b"), framework.Identity{}, "may not contain '/'"},
		{"a port", uris("lockstep://kubelet:80/a"), framework.Identity{}, "only lockstep://"},
		{"a control character", &x509.Certificate{DNSNames: []string{"kube\x01let"}}, framework.Identity{}, "control character"},
		{"a long name", uris("lockstep://kubelet/" + strings.Repeat("n", 300)), framework.Identity{}, "at most 253"},
		// Spellings that would make one identity look like another.
		{"a trailing slash", uris("lockstep://kubelet/node-1/"), framework.Identity{}, "may not contain '/'"},
		{"an escaped slash", uris("lockstep://kubelet/node%2F1"), framework.Identity{}, "may not contain '/'"},
		{"an empty first part", uris("lockstep://kubelet//node-1"), framework.Identity{}, "may not contain '/'"},
		{"the scheme in capitals is the scheme", uris("lockstep://kubelet/a", "LOCKSTEP://operator/b"), framework.Identity{}, "must name one"},
		{"user info", uris("lockstep://operator@kubelet/a"), framework.Identity{}, "only lockstep://"},
		{"no component", uris("lockstep:///node-1"), framework.Identity{}, "component is required"},
		{"an opaque URI", uris("lockstep:operator"), framework.Identity{}, "component is required"},
		{"an escaped control character", uris("lockstep://kubelet/node-1%00"), framework.Identity{}, "control character"},
		{"an escaped invisible character", uris("lockstep://kubelet/node-1%E2%80%8B"), framework.Identity{}, "U+200B"},
		{"case is kept, not folded", uris("lockstep://Operator/x"), framework.Identity{Component: "Operator", Name: "x"}, ""},
		{"no certificate", nil, framework.Identity{}, "no certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := framework.IdentityFromCertificate(tc.cert)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, id)
		})
	}
	assert.Equal(t, "lockstep://kubelet/node-1", framework.Identity{Component: "kubelet", Name: "node-1"}.String())
	assert.Equal(t, "lockstep://kubelet", framework.Identity{Component: "kubelet"}.String())
}
