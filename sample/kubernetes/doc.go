// Package kubernetes holds the sample's pieces that run inside, or read
// from, a real Kubernetes control plane, in a module of their own so that
// client-go and kube-scheduler's plugin API stay out of the sample's and
// the framework's go.mod: [schedulerplugin] is the sample extender asked
// over lockstep from a kube-scheduler plugin, and [endpointslices] finds a
// peer's replicas, and their readiness, in a Service's EndpointSlices.
package kubernetes
