package deploy_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/sample/internal/kube"
	"github.com/lockstep-dev/lockstep/sample/internal/scheduler"
)

// certManagerObject is the part of cert-manager's Certificate and Issuer
// (cert-manager.io/v1) the manifests use. cert-manager's own Go types are
// not in k8s.io/api and would bring its whole module; the members listed
// here are spelled as its API reference spells them, and a member outside
// them fails the check as an unknown field would.
type certManagerObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		// Issuer
		SelfSigned *struct{} `json:"selfSigned,omitempty"`
		CA         *struct {
			SecretName string `json:"secretName"`
		} `json:"ca,omitempty"`
		// Certificate
		IsCA       bool     `json:"isCA,omitempty"`
		CommonName string   `json:"commonName,omitempty"`
		SecretName string   `json:"secretName,omitempty"`
		DNSNames   []string `json:"dnsNames,omitempty"`
		URIs       []string `json:"uris,omitempty"`
		Usages     []string `json:"usages,omitempty"`
		PrivateKey *struct {
			Algorithm string `json:"algorithm"`
			Size      int    `json:"size"`
		} `json:"privateKey,omitempty"`
		IssuerRef *struct {
			Name string `json:"name"`
			Kind string `json:"kind"`
		} `json:"issuerRef,omitempty"`
	} `json:"spec"`
}

// typed returns the real type of a document's apiVersion and kind.
func typed(tm metav1.TypeMeta) (any, error) {
	switch tm.APIVersion + " " + tm.Kind {
	case "v1 Namespace":
		return &corev1.Namespace{}, nil
	case "v1 Service":
		return &corev1.Service{}, nil
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}, nil
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}, nil
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}, nil
	case "apps/v1 DaemonSet":
		return &appsv1.DaemonSet{}, nil
	case "apps/v1 StatefulSet":
		return &appsv1.StatefulSet{}, nil
	case "rbac.authorization.k8s.io/v1 Role":
		return &rbacv1.Role{}, nil
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		return &rbacv1.RoleBinding{}, nil
	case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}, nil
	case "cert-manager.io/v1 Certificate", "cert-manager.io/v1 Issuer":
		return &certManagerObject{}, nil
	}
	return nil, fmt.Errorf("no type known for apiVersion %q kind %q", tm.APIVersion, tm.Kind)
}

// documents splits a manifest file into its YAML documents.
func documents(b []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			out = append(out, doc)
		}
	}
}

// decodeStrict decodes one document into its real type, as the API server
// does with field validation Strict.
func decodeStrict(doc []byte) (any, error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return nil, err
	}
	obj, err := typed(tm)
	if err != nil {
		return nil, err
	}
	if err := kube.DecodeStrict(doc, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", tm.APIVersion, tm.Kind, err)
	}
	return obj, nil
}

// TestManifestsDecodeStrictlyIntoKubernetesTypes decodes every document of
// every manifest (the kustomizations are kustomize's input, not objects a
// cluster is sent) into the real k8s.io/api types.
func TestManifestsDecodeStrictlyIntoKubernetesTypes(t *testing.T) {
	files, err := filepath.Glob("*.yaml")
	require.NoError(t, err)
	more, err := filepath.Glob("kube-scheduler/*.yaml")
	require.NoError(t, err)
	files = append(files, more...)
	decoded := 0
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		docs, err := documents(b)
		require.NoError(t, err, f)
		for i, doc := range docs {
			_, err := decodeStrict(doc)
			assert.NoError(t, err, "%s document %d", f, i+1)
			decoded++
		}
	}
	assert.GreaterOrEqual(t, decoded, 17)
}

// TestSchedulerConfigurationDecodesStrictly decodes the scheduler's
// KubeSchedulerConfiguration, as its ConfigMap holds it, strictly into
// k8s.io/kube-scheduler's configuration type, as the scheduler reads it.
func TestSchedulerConfigurationDecodesStrictly(t *testing.T) {
	b, err := os.ReadFile("scheduler.yaml")
	require.NoError(t, err)
	docs, err := documents(b)
	require.NoError(t, err)
	obj, err := decodeStrict(docs[0])
	require.NoError(t, err)
	cm, ok := obj.(*corev1.ConfigMap)
	require.True(t, ok, "scheduler.yaml starts with the scheduler's ConfigMap")
	cfg, warnings, err := scheduler.ParseConfig([]byte(cm.Data["scheduler-config.yaml"]))
	require.NoError(t, err)
	assert.Empty(t, warnings)
	require.Len(t, cfg.Extenders, 1)
	e := cfg.Extenders[0]
	assert.False(t, e.NodeCacheCapable)
	assert.Equal(t, "/etc/lockstep/tls/ca.crt", e.TLSConfig.CAFile)

	// The check can fail: a misspelt field, a field outside the type.
	for _, bad := range []string{
		strings.Replace(cm.Data["scheduler-config.yaml"], "nodeCacheCapable", "nodecachecapable", 1),
		cm.Data["scheduler-config.yaml"] + "    filterverb: filter\n",
		cm.Data["scheduler-config.yaml"] + "percentageOfNodes: 50\n",
	} {
		_, _, err := scheduler.ParseConfig([]byte(bad))
		assert.Error(t, err, bad)
	}
	// A known field the sample does not implement is accepted, named.
	_, warnings, err = scheduler.ParseConfig([]byte(cm.Data["scheduler-config.yaml"] + "percentageOfNodesToScore: 50\nleaderElection: {leaderElect: false}\n"))
	require.NoError(t, err)
	assert.Equal(t, []string{"accepted but not implemented by the sample scheduler: leaderElection, percentageOfNodesToScore"}, warnings)
}

// TestStrictDecodingRefusesWhatACLusterRefuses shows the check can fail:
// a misspelt field, a field in the wrong place, a duplicate.
func TestStrictDecodingRefusesWhatAClusterRefuses(t *testing.T) {
	for _, doc := range []string{
		"apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {clusterIp: None}\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {spec: {containers: [{name: a, image: b, readinessprobe: {}}]}}}\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata: {name: x}\nspec: {secretname: x}\n",
		"apiVersion: v2\nkind: Service\nmetadata: {name: x}\n",
	} {
		_, err := decodeStrict([]byte(doc))
		assert.Error(t, err, doc)
	}
}
