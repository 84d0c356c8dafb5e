// Package deploy applies the sample's manifests (sample/deploy) to a real
// apiserver with server-side apply, reads them back, and runs the pieces
// that talk to Kubernetes under the identities the manifests give them.
package deploy

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"github.com/lockstep-dev/lockstep/e2e/controlplane"
	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/sample/kubernetes/endpointslices"
)

const fieldManager = "lockstep-e2e"

// docs reads every YAML document of files, skipping kustomizations
// (kustomize's input, not objects).
func docs(t *testing.T, files ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" || !strings.HasSuffix(f, ".yaml") {
			continue
		}
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, f)
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj := &unstructured.Unstructured{}
			require.NoError(t, yaml.Unmarshal(doc, &obj.Object), f)
			if len(obj.Object) > 0 {
				out = append(out, obj)
			}
		}
	}
	return out
}

// applier applies objects with server-side apply through a dynamic client
// and a REST mapper that learns CRDs once reset.
type applier struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
}

func (a *applier) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource).Namespace(obj.GetNamespace()), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

func (a *applier) apply(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := a.resource(obj)
	if err != nil {
		return nil, err
	}
	return r.Apply(ctx, obj.GetName(), obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
}

func (a *applier) get(ctx context.Context, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	r, err := a.resource(obj)
	if err != nil {
		return nil, err
	}
	return r.Get(ctx, obj.GetName(), metav1.GetOptions{})
}

// contains reports where got lacks something of want: every member of a
// map, every item of a list (in order), every scalar equal (numbers by
// value).
func contains(want, got any, at string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %T", at, got)}
		}
		var out []string
		for k, v := range w {
			out = append(out, contains(v, g[k], at+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %d items, got %v", at, len(w), got)}
		}
		var out []string
		for i := range w {
			out = append(out, contains(w[i], g[i], fmt.Sprintf("%s[%d]", at, i))...)
		}
		return out
	}
	if fmt.Sprint(want) == fmt.Sprint(got) || reflect.DeepEqual(want, got) {
		return nil
	}
	return []string{fmt.Sprintf("%s: want %v, got %v", at, want, got)}
}

func glob(t *testing.T, patterns ...string) []string {
	t.Helper()
	var out []string
	for _, p := range patterns {
		m, err := filepath.Glob(p)
		require.NoError(t, err)
		out = append(out, m...)
	}
	sort.Strings(out)
	return out
}

// The sample's manifests, and cert-manager's CRDs they need, are applied
// to a real apiserver with server-side apply and read back: every member
// of every manifest is in the stored object.
func applyAll(t *testing.T, ctx context.Context, plane *controlplane.Plane) []*unstructured.Unstructured {
	t.Helper()
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	crdDir := filepath.Join(root, "..", "shared", "crds", "cert-manager")
	crdFiles := glob(t, filepath.Join(crdDir, "*.yaml"))
	require.NotEmpty(t, crdFiles, "cert-manager's CRDs are read from %s (shared/ beside the clone)", crdDir)

	dyn, err := dynamic.NewForConfig(plane.Admin)
	require.NoError(t, err)
	disc, err := discovery.NewDiscoveryClientForConfig(plane.Admin)
	require.NoError(t, err)
	a := &applier{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}

	crds := docs(t, crdFiles...)
	require.Len(t, crds, 4, "cert-manager's Certificate, CertificateRequest, Issuer and ClusterIssuer")
	for _, crd := range crds {
		_, err := a.apply(ctx, crd)
		require.NoError(t, err, crd.GetName())
	}
	for _, crd := range crds {
		require.NoError(t, wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := a.get(ctx, crd)
			if err != nil {
				return false, err
			}
			var c apiextensionsv1.CustomResourceDefinition
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, &c); err != nil {
				return false, err
			}
			for _, cond := range c.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		}), "CRD %s established", crd.GetName())
	}
	a.mapper.Reset()

	objs := docs(t, glob(t, filepath.Join(root, "sample/deploy/*.yaml"), filepath.Join(root, "sample/deploy/kube-scheduler/*.yaml"))...)
	// The namespace first, as kubectl orders it.
	sort.SliceStable(objs, func(i, j int) bool { return objs[i].GetKind() == "Namespace" && objs[j].GetKind() != "Namespace" })
	for _, obj := range objs {
		applied, err := a.apply(ctx, obj)
		require.NoError(t, err, "%s %s", obj.GetKind(), obj.GetName())
		got, err := a.get(ctx, obj)
		require.NoError(t, err, "%s %s read back", obj.GetKind(), obj.GetName())
		assert.Equal(t, applied.GetResourceVersion(), got.GetResourceVersion())
		want := obj.DeepCopy().Object
		assert.Empty(t, contains(want, got.Object, obj.GetKind()+" "+obj.GetName()), "%s %s is stored as applied", obj.GetKind(), obj.GetName())
		// An object of a name alone (a Namespace) has no field to own.
		if len(obj.Object) > 3 || len(obj.GetLabels())+len(obj.GetAnnotations()) > 0 {
			managed := false
			for _, m := range got.GetManagedFields() {
				managed = managed || (m.Manager == fieldManager && m.Operation == metav1.ManagedFieldsOperationApply)
			}
			assert.True(t, managed, "%s %s: applied server-side by %s", obj.GetKind(), obj.GetName(), fieldManager)
		}
	}
	t.Logf("applied %d CRDs and %d objects of sample/deploy with server-side apply", len(crds), len(objs))
	return objs
}

// can asks the apiserver whether user may do verb on resource.
func can(t *testing.T, ctx context.Context, plane *controlplane.Plane, user string, groups []string, ns, group, res, verb string) bool {
	t.Helper()
	r, err := plane.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Group: group, Resource: res, Verb: verb}}},
		metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.Allowed
}

func saUser(name string) (string, []string) {
	return "system:serviceaccount:lockstep:" + name, []string{"system:serviceaccounts", "system:serviceaccounts:lockstep", "system:authenticated"}
}

// sample/deploy applied for real: every object stored as written; the
// sample's components, which never call the Kubernetes API, have
// identities that may do nothing; and lockstep-kube-scheduler, run as its
// ServiceAccount (impersonated), with the configuration of its ConfigMap,
// elects itself leader, finds the extender through the extender Service's
// EndpointSlices and binds a pod through it: its roles are enough.
func TestSampleDeployOnARealAPIServer(t *testing.T) {
	plane := controlplane.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	objs := applyAll(t, ctx, plane)

	for _, sa := range []string{"nodecontroller", "kubelet", "scheduler", "extender", "legacy-extender"} {
		user, groups := saUser(sa)
		for _, r := range [][3]string{{"", "pods", "list"}, {"", "secrets", "get"}, {"discovery.k8s.io", "endpointslices", "list"},
			{"", "nodes", "list"}, {"coordination.k8s.io", "leases", "create"}} {
			assert.False(t, can(t, ctx, plane, user, groups, "lockstep", r[0], r[1], r[2]), "%s may not %s %s", sa, r[2], r[1])
		}
	}
	user, groups := saUser("lockstep-kube-scheduler")
	assert.True(t, can(t, ctx, plane, user, groups, "lockstep", "discovery.k8s.io", "endpointslices", "watch"))
	assert.False(t, can(t, ctx, plane, user, groups, "lockstep", "", "secrets", "get"), "the scheduler may not read secrets")
	assert.False(t, can(t, ctx, plane, user, groups, "default", "discovery.k8s.io", "endpointslices", "list"),
		"the scheduler reads endpointslices in lockstep only")

	// What the pods would mount: the scheduler's configuration, with this
	// test's files, and the lockstep PKI cert-manager would issue.
	var config string
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == "lockstep-kube-scheduler-config" {
			config, _, _ = unstructured.NestedString(o.Object, "data", "config.yaml")
		}
	}
	require.NotEmpty(t, config)
	pki := filepath.Join(plane.Dir, "lockstep")
	require.NoError(t, os.MkdirAll(pki, 0o700))
	ca, err := certs.NewCA("lockstep sample CA")
	require.NoError(t, err)
	extCert, extKey, caFile, err := ca.WriteFiles(pki, "extender", ca.MustIssue(certs.Spec{Component: "extender", Name: "extender", Server: true}))
	require.NoError(t, err)
	schedCert, schedKey, _, err := ca.WriteFiles(pki, "scheduler", ca.MustIssue(certs.Spec{Component: "scheduler", Name: "lockstep-kube-scheduler"}))
	require.NoError(t, err)
	config = strings.NewReplacer("/etc/lockstep/tls/ca.crt", caFile, "/etc/lockstep/tls/tls.crt", schedCert, "/etc/lockstep/tls/tls.key", schedKey).Replace(config)

	// The extender, and its Service's EndpointSlice as the endpoint
	// controller would write it for its pod.
	extBin, err := controlplane.Bin("lockstep-sample-extender")
	require.NoError(t, err)
	port := controlplane.FreePort(t)
	controlplane.StartProcess(t, plane.Dir, "extender", extBin, "--listen=127.0.0.1:"+strconv.Itoa(port), "--api=v2", "--fork",
		"--tls-cert="+extCert, "--tls-key="+extKey, "--tls-ca="+caFile, "--maintenance=node-b", "--log-level=warn")
	_, err = plane.Client.DiscoveryV1().EndpointSlices("lockstep").Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "extender-e2e", Namespace: "lockstep", Labels: map[string]string{
			discoveryv1.LabelServiceName: "extender", discoveryv1.LabelManagedBy: "e2e.lockstep.dev"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("https"), Port: ptr(int32(port))}},
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{podIP}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The scheduler as its ServiceAccount: the admin's certificate,
	// impersonating it.
	id := *plane.Admin
	id.Impersonate.UserName, id.Impersonate.Groups = user, groups

	// The plugin's source of the extender's replicas, as the scheduler's
	// identity: it reads the extender Service's slice. (The apiserver
	// refuses loopback addresses in slices: the slice lists a TEST-NET-1
	// address, which this source maps to the extender's listener, and the
	// scheduler below is given that listener's URL.)
	sa, err := kubernetes.NewForConfig(&id)
	require.NoError(t, err)
	reports := make(chan []framework.EndpointReport, 8)
	srcCtx, stopSource := context.WithCancel(ctx)
	defer stopSource()
	go (&endpointslices.Source{Client: sa, Namespace: "lockstep", Service: "extender", Port: "https",
		URL: func(addr string, port int32) string {
			if addr == podIP {
				addr = "127.0.0.1"
			}
			return "https://" + net.JoinHostPort(addr, strconv.Itoa(int(port)))
		}}).RunReadiness(srcCtx, func(eps []framework.EndpointReport) { reports <- eps })
	extURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	select {
	case eps := <-reports:
		assert.Equal(t, []framework.EndpointReport{{URL: extURL}}, eps, "the scheduler's identity reads the extender's EndpointSlices")
	case <-time.After(time.Minute):
		t.Fatal("no report of the extender's EndpointSlices as the scheduler's identity")
	}
	stopSource()

	kubeconfig := plane.Kubeconfig(t, "lockstep-kube-scheduler-sa", &id)
	var full map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(config), &full))
	full["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	args := full["profiles"].([]any)[0].(map[string]any)["pluginConfig"].([]any)[0].(map[string]any)["args"].(map[string]any)
	require.Contains(t, args, "service", "the deployed scheduler finds the extender through its Service")
	delete(args, "service")
	args["endpoints"] = []any{extURL}
	b, err := yaml.Marshal(full)
	require.NoError(t, err)
	plane.StartSchedulerWith(t, "lockstep-kube-scheduler", kubeconfig, string(b))

	for _, n := range []string{"node-a", "node-b"} {
		_, err := plane.Client.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
				corev1.ResourceMemory: resource.MustParse("8Gi"), corev1.ResourcePods: resource.MustParse("110")}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// No kubelet: nothing lifts the not-ready taint, which the pod
	// tolerates; nor does a controller create the namespace's default
	// ServiceAccount.
	_, err = plane.Client.CoreV1().ServiceAccounts("lockstep").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = plane.Client.CoreV1().Pods("lockstep").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "placed"},
		Spec: corev1.PodSpec{SchedulerName: "lockstep-scheduler", ServiceAccountName: "default",
			Tolerations: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists}},
			Containers:  []corev1.Container{{Name: "app", Image: "registry.invalid/app:1"}}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	var node string
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := plane.Client.CoreV1().Pods("lockstep").Get(ctx, "placed", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		node = p.Spec.NodeName
		return node != "", nil
	}), "the scheduler, as its ServiceAccount, binds the pod")
	assert.Equal(t, "node-a", node, "node-b is in the extender's maintenance window")
	lease, err := plane.Client.CoordinationV1().Leases("kube-system").Get(ctx, "lockstep-kube-scheduler", metav1.GetOptions{})
	require.NoError(t, err, "the scheduler holds its own Lease")
	assert.NotEmpty(t, ptrValue(lease.Spec.HolderIdentity))
}

func ptr[T any](v T) *T { return &v }

// podIP is the address the extender's EndpointSlice lists, one of
// TEST-NET-1 (RFC 5737): the apiserver refuses loopback addresses there.
const podIP = "192.0.2.10"

func ptrValue(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
