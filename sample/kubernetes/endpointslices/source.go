// Package endpointslices finds a lockstep peer's replicas in the
// EndpointSlices of its Kubernetes Service, as kube-proxy and every
// service mesh find a Service's backends: [Source] is a
// [framework.ReadinessSource] fed by a client-go informer on the slices
// labelled kubernetes.io/service-name=<service>, reporting each endpoint
// address with its conditions.ready.
//
// Readiness is what makes a restart cheap to notice. When a restarted pod
// turns ready, the endpoint controller flips its endpoint's ready
// condition; the informer delivers that change within the watch's
// latency, and the lockstep client dials the endpoint at once instead of
// at its next planned dial (framework.ReadinessSource). Endpoints that are
// not ready are still reported, and still handshaken: a lockstep server is
// not ready until its own peers have handshaken it, so its Service
// publishes not-ready addresses (publishNotReadyAddresses: true) and
// readiness decides the reconnect, not the routing.
//
// The client's identity needs get, list and watch on
// discovery.k8s.io endpointslices in the Service's namespace, nothing
// else.
package endpointslices

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	listersv1 "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lockstep-dev/lockstep/framework"
)

// Source reports the endpoints of one Service's EndpointSlices. Its
// fields are set before Run or RunReadiness and not changed after.
type Source struct {
	// Client reads the EndpointSlices (required).
	Client kubernetes.Interface
	// Namespace and Service name the Service (required).
	Namespace, Service string
	// Port names the slice port the peer serves lockstep on; empty takes
	// the slices' only port (a slice with several then reports none, and
	// says so in the log).
	Port string
	// Scheme is the URLs' scheme; default "https".
	Scheme string
	// URL, if set, builds an endpoint's URL from one of its addresses and
	// the port, instead of Scheme://address:port: to reach pods by a name
	// their certificates carry, say. (The apiserver refuses loopback
	// addresses in EndpointSlices, so tests of processes on one host list
	// other addresses and map them to 127.0.0.1 here.)
	URL func(address string, port int32) string
	// Logger receives the source's logs; default slog.Default().
	Logger *slog.Logger
	// Resync is the informer's resync period; default none (a watch
	// delivers every change).
	Resync time.Duration
}

var _ framework.ReadinessSource = (*Source)(nil)

// Run reports the URLs of every endpoint, ready or not, until ctx ends.
func (s *Source) Run(ctx context.Context, update func(urls []string)) {
	s.RunReadiness(ctx, func(eps []framework.EndpointReport) {
		urls := make([]string, len(eps))
		for i, e := range eps {
			urls[i] = e.URL
		}
		update(urls)
	})
}

// RunReadiness reports every endpoint with its readiness: once the
// informer's cache has synced, then after every change to the Service's
// slices, until ctx ends. Reports come from one goroutine at a time.
func (s *Source) RunReadiness(ctx context.Context, update func(endpoints []framework.EndpointReport)) {
	logger := s.logger()
	if s.Client == nil || s.Namespace == "" || s.Service == "" {
		logger.Error("endpointslices: Client, Namespace and Service are required")
		<-ctx.Done()
		return
	}
	factory := informers.NewSharedInformerFactoryWithOptions(s.Client, s.Resync,
		informers.WithNamespace(s.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = discoveryv1.LabelServiceName + "=" + s.Service
		}))
	informer := factory.Discovery().V1().EndpointSlices()
	lister := informer.Lister()
	synced := make(chan struct{})
	// Every change reports the whole set again, from the informer's cache,
	// on the informer's one handler goroutine: reports never overlap.
	changed := func() {
		select {
		case <-synced:
		default:
			return // the first report waits for the whole set
		}
		eps, err := s.endpoints(lister)
		if err != nil {
			logger.Error("endpointslices: list from the cache", "service", s.Namespace+"/"+s.Service, "error", err)
			return
		}
		update(eps)
	}
	reg, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		UpdateFunc: func(any, any) { changed() },
		DeleteFunc: func(any) { changed() },
	})
	if err != nil {
		logger.Error("endpointslices: informer", "error", err)
		<-ctx.Done()
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
		return
	}
	close(synced)
	changed()
	<-ctx.Done()
}

// endpoints builds the reports from every slice of the Service: one per
// address, ready if any slice says so (an address may be in two slices
// while the controller moves it), in a stable order.
func (s *Source) endpoints(lister listersv1.EndpointSliceLister) ([]framework.EndpointReport, error) {
	sel := labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: s.Service})
	list, err := lister.EndpointSlices(s.Namespace).List(sel)
	if err != nil {
		return nil, err
	}
	scheme := s.Scheme
	if scheme == "" {
		scheme = "https"
	}
	notReady := map[string]bool{}
	for _, slice := range list {
		port, err := s.port(slice)
		if err != nil {
			s.logger().Warn("endpointslices: slice skipped", "slice", slice.Namespace+"/"+slice.Name, "error", err)
			continue
		}
		for _, ep := range slice.Endpoints {
			// A nil ready is an unknown state, which consumers take as ready.
			down := ep.Conditions.Ready != nil && !*ep.Conditions.Ready
			for _, addr := range ep.Addresses {
				u := scheme + "://" + net.JoinHostPort(addr, strconv.Itoa(int(port)))
				if s.URL != nil {
					u = s.URL(addr, port)
				}
				if prev, seen := notReady[u]; !seen || prev {
					notReady[u] = down
				}
			}
		}
	}
	out := make([]framework.EndpointReport, 0, len(notReady))
	for u, down := range notReady {
		out = append(out, framework.EndpointReport{URL: u, NotReady: down})
	}
	slices.SortFunc(out, func(a, b framework.EndpointReport) int {
		switch {
		case a.URL < b.URL:
			return -1
		case a.URL > b.URL:
			return 1
		}
		return 0
	})
	return out, nil
}

// port returns the number of the slice's lockstep port.
func (s *Source) port(slice *discoveryv1.EndpointSlice) (int32, error) {
	var found []int32
	for _, p := range slice.Ports {
		if p.Port == nil {
			continue
		}
		if s.Port == "" || (p.Name != nil && *p.Name == s.Port) {
			found = append(found, *p.Port)
		}
	}
	switch {
	case len(found) == 1:
		return found[0], nil
	case len(found) == 0 && s.Port != "":
		return 0, fmt.Errorf("no port named %q", s.Port)
	case len(found) == 0:
		return 0, errors.New("no port")
	}
	return 0, fmt.Errorf("%d ports: name the lockstep port (Source.Port)", len(found))
}

func (s *Source) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}
