// Package deploy_test checks the Kubernetes manifests beside it for what
// lockstep needs of them; a cluster is not needed.
package deploy_test

import (
	"bytes"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/sample/internal/daemon"
)

// object is the part of a manifest the checks read.
type object struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		ClusterIP                string                 `yaml:"clusterIP"`
		PublishNotReadyAddresses bool                   `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]any         `yaml:"selector"`
		SecretName               string                 `yaml:"secretName"`
		CommonName               string                 `yaml:"commonName"`
		IsCA                     bool                   `yaml:"isCA"`
		URIs                     []string               `yaml:"uris"`
		Template                 struct{ Spec podSpec } `yaml:"template"`
	} `yaml:"spec"`
}

type podSpec struct {
	Containers []struct {
		Name           string   `yaml:"name"`
		Command        []string `yaml:"command"`
		Args           []string `yaml:"args"`
		ReadinessProbe *struct {
			HTTPGet struct {
				Path   string `yaml:"path"`
				Scheme string `yaml:"scheme"`
			} `yaml:"httpGet"`
		} `yaml:"readinessProbe"`
	} `yaml:"containers"`
	Volumes []struct {
		Secret struct {
			SecretName string `yaml:"secretName"`
		} `yaml:"secret"`
	} `yaml:"volumes"`
}

func load(t *testing.T) (map[string][]object, []string) {
	t.Helper()
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	byKind := map[string][]object{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		dec := yaml.NewDecoder(bytes.NewReader(b))
		for {
			var o object
			err := dec.Decode(&o)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			byKind[o.Kind] = append(byKind[o.Kind], o)
		}
	}
	return byKind, files
}

func arg(args []string, name string) []string {
	var out []string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			out = append(out, v)
		}
	}
	return out
}

func TestManifests(t *testing.T) {
	byKind, files := load(t)
	secrets := map[string]bool{}
	for _, c := range byKind["Certificate"] {
		secrets[c.Spec.SecretName] = true
	}
	deployments := map[string]object{}
	for _, d := range byKind["Deployment"] {
		deployments[d.Metadata.Name] = d
		spec := d.Spec.Template.Spec
		require.Len(t, spec.Containers, 1, d.Metadata.Name)
		c := spec.Containers[0]
		require.NotNil(t, c.ReadinessProbe, "%s has a readiness probe", d.Metadata.Name)
		assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path, d.Metadata.Name)
		assert.Equal(t, "HTTPS", c.ReadinessProbe.HTTPGet.Scheme, d.Metadata.Name)
		assert.Equal(t, "--listen=0.0.0.0:8443", c.Args[0], d.Metadata.Name)
		assert.True(t, strings.HasPrefix(c.Args[1], "--api="), "%s: the v1 overlay replaces args[1]", d.Metadata.Name)
		if slices.Contains(c.Args, "--fork") {
			assert.Equal(t, "--fork", c.Args[2], "%s: the v1 overlay replaces args[2]", d.Metadata.Name)
		}
		assert.NotEmpty(t, arg(c.Args, "tls-cert"), "%s speaks TLS", d.Metadata.Name)
		for _, v := range spec.Volumes {
			if v.Secret.SecretName == "" {
				continue // a ConfigMap
			}
			assert.True(t, secrets[v.Secret.SecretName], "%s mounts %s, which certificates.yaml issues", d.Metadata.Name, v.Secret.SecretName)
		}
		for _, name := range []string{"nodecontroller"} {
			for _, peer := range arg(c.Args, name) {
				_, err := daemon.ParsePeer(peer)
				assert.NoError(t, err, d.Metadata.Name)
				assert.True(t, strings.HasPrefix(peer, "dns+https://"), "%s finds its peer by DNS", d.Metadata.Name)
			}
		}
		for _, ext := range arg(c.Args, "extender") {
			_, rest, _ := strings.Cut(ext, "=")
			peer, _, _ := strings.Cut(rest, ";")
			_, err := daemon.ParsePeer(peer)
			assert.NoError(t, err, ext)
		}
	}
	require.Len(t, deployments, 5)
	// The lockstep servers' Services are headless and list unready pods.
	for _, s := range byKind["Service"] {
		if s.Metadata.Name == "legacy-extender" {
			continue // a plain extender: ready without peers
		}
		assert.Equal(t, "None", s.Spec.ClusterIP, s.Metadata.Name)
		assert.True(t, s.Spec.PublishNotReadyAddresses, s.Metadata.Name)
		assert.Contains(t, deployments, s.Metadata.Name)
	}
	assert.Len(t, byKind["Service"], 3)

	// Every component's certificate names its identity by URI SAN, read
	// as the framework reads it: the component is the binary that mounts
	// it (operator-tls is for Prometheus and lockstepctl).
	mountedBy := map[string]string{}
	for _, d := range deployments {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret.SecretName != "" {
				mountedBy[v.Secret.SecretName] = d.Spec.Template.Spec.Containers[0].Command[0]
			}
		}
	}
	for _, c := range byKind["Certificate"] {
		if c.Spec.IsCA {
			continue
		}
		var uris []*url.URL
		for _, raw := range c.Spec.URIs {
			u, err := url.Parse(raw)
			require.NoError(t, err, c.Metadata.Name)
			uris = append(uris, u)
		}
		require.Len(t, uris, 1, "%s names one identity by URI SAN", c.Metadata.Name)
		id, err := framework.IdentityFromCertificate(&x509.Certificate{URIs: uris, Subject: pkix.Name{CommonName: c.Spec.CommonName}})
		require.NoError(t, err, c.Metadata.Name)
		assert.NotEmpty(t, id.Name, "%s names the holder, not only the component", c.Metadata.Name)
		want := mountedBy[c.Spec.SecretName]
		if c.Metadata.Name == "operator-tls" {
			want = framework.OperatorComponent
		}
		assert.Equal(t, want, id.Component, "%s names the component that presents it", c.Metadata.Name)
	}

	k, err := os.ReadFile("kustomization.yaml")
	require.NoError(t, err)
	for _, f := range files {
		if f != "kustomization.yaml" {
			assert.Contains(t, string(k), "- "+f, "kustomization.yaml lists %s", f)
		}
	}
}
