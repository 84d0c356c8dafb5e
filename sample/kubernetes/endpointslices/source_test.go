package endpointslices

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	listersv1 "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

func ptr[T any](v T) *T { return &v }

func slice(name, service string, ports []discoveryv1.EndpointPort, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: name, Namespace: "lockstep", Labels: map[string]string{discoveryv1.LabelServiceName: service}},
		AddressType: discoveryv1.AddressTypeIPv4, Ports: ports, Endpoints: eps}
}

func endpoint(ready *bool, addrs ...string) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ready}}
}

// The reports of a Service's slices: one per address, with its port;
// ready unless its ready condition is false (nil is unknown, taken as
// ready); an address in two slices is ready if either says so; slices of
// other Services, and slices without the named port, are left out.
func TestEndpointsFromSlices(t *testing.T) {
	lockstepPort := []discoveryv1.EndpointPort{{Name: ptr("lockstep"), Port: ptr[int32](8443)}, {Name: ptr("metrics"), Port: ptr[int32](9090)}}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range []*discoveryv1.EndpointSlice{
		slice("extender-a", "extender", lockstepPort,
			endpoint(ptr(true), "10.0.0.1"), endpoint(ptr(false), "10.0.0.2"), endpoint(nil, "10.0.0.3")),
		// The controller moving 10.0.0.2 to another slice, ready there.
		slice("extender-b", "extender", lockstepPort, endpoint(ptr(true), "10.0.0.2"), endpoint(ptr(false), "10.0.0.4")),
		slice("extender-c", "extender", []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr[int32](80)}}, endpoint(ptr(true), "10.0.0.9")),
		slice("other", "nodecontroller", lockstepPort, endpoint(ptr(true), "10.0.1.1")),
	} {
		require.NoError(t, indexer.Add(s))
	}
	src := &Source{Namespace: "lockstep", Service: "extender", Port: "lockstep", Logger: frameworktest.Quiet()}
	got, err := src.endpoints(listersv1.NewEndpointSliceLister(indexer))
	require.NoError(t, err)
	assert.Equal(t, []framework.EndpointReport{
		{URL: "https://10.0.0.1:8443"},
		{URL: "https://10.0.0.2:8443"},
		{URL: "https://10.0.0.3:8443"},
		{URL: "https://10.0.0.4:8443", NotReady: true},
	}, got)

	// Without a port name, a slice with two ports says nothing.
	src = &Source{Namespace: "lockstep", Service: "extender", Scheme: "http", Logger: frameworktest.Quiet()}
	got, err = src.endpoints(listersv1.NewEndpointSliceLister(indexer))
	require.NoError(t, err)
	assert.Equal(t, []framework.EndpointReport{{URL: "http://10.0.0.9:80"}}, got)
}

func TestIPv6Addresses(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s := slice("extender-v6", "extender", []discoveryv1.EndpointPort{{Port: ptr[int32](8443)}}, endpoint(ptr(true), "fd00::1"))
	s.AddressType = discoveryv1.AddressTypeIPv6
	require.NoError(t, indexer.Add(s))
	got, err := (&Source{Namespace: "lockstep", Service: "extender"}).endpoints(listersv1.NewEndpointSliceLister(indexer))
	require.NoError(t, err)
	assert.Equal(t, []framework.EndpointReport{{URL: "https://[fd00::1]:8443"}}, got)
}

// URL builds each endpoint's URL when set.
func TestURLBuilder(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	require.NoError(t, indexer.Add(slice("extender-a", "extender", []discoveryv1.EndpointPort{{Port: ptr[int32](8443)}},
		endpoint(ptr(true), "10.0.0.1"))))
	src := &Source{Namespace: "lockstep", Service: "extender", URL: func(addr string, port int32) string {
		return fmt.Sprintf("https://%s.extender.lockstep.svc:%d", strings.ReplaceAll(addr, ".", "-"), port)
	}}
	got, err := src.endpoints(listersv1.NewEndpointSliceLister(indexer))
	require.NoError(t, err)
	assert.Equal(t, []framework.EndpointReport{{URL: "https://10-0-0-1.extender.lockstep.svc:8443"}}, got)
}
