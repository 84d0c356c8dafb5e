package scheduler

import (
	"fmt"
	"maps"
	"os"

	corev1 "k8s.io/api/core/v1"

	extv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	"github.com/lockstep-dev/lockstep/sample/internal/kube"
)

// The scheduler's pods are its own (NewPod): a name, requests that vary,
// a priority class. Kubernetes extenders decide by what real pods carry
// besides: topolvm by an annotation and the extended resource its webhook
// adds, gpushare-scheduler-extender by an extended resource limit,
// Telemetry Aware Scheduling by a label, and each is configured with
// managedResources, so that kube-scheduler calls it only for pods that
// request its resource. A pod template gives every pod that: its labels,
// annotations and tolerations, and its containers' requests of resources
// other than CPU and memory (a limit without a request counts as the
// request), which decide which extenders with managedResources are called.
// 2.0.0's pod reference carries them all; a 1.0.0 request's core/v1 Pod
// carries the extended resources as requests and limits, as the API
// server stores them.

// LoadPodTemplate reads a core/v1 Pod (apiVersion v1, kind Pod) from a
// YAML or JSON file, strictly, as a pod template ([Config.PodTemplate]).
func LoadPodTemplate(path string) (*corev1.Pod, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var p corev1.Pod
	if err := kube.DecodeStrict(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if p.APIVersion != "v1" || p.Kind != "Pod" {
		return nil, fmt.Errorf("%s: apiVersion %q kind %q: want v1 Pod", path, p.APIVersion, p.Kind)
	}
	return &p, nil
}

// fromTemplate gives pod the template's labels (the scheduler's own win
// where both name one), annotations, tolerations and requests of resources
// other than CPU and memory.
func (s *Scheduler) fromTemplate(pod *extv2.PodRef) {
	t := s.cfg.PodTemplate
	if t == nil {
		return
	}
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, pod.Labels)
	pod.Labels = labels
	pod.Annotations = maps.Clone(t.Annotations)
	for _, tol := range t.Spec.Tolerations {
		pod.Tolerations = append(pod.Tolerations, extv2.TolerationFromCore(tol))
	}
	pod.Requests.Extended = kube.OtherRequests(t)
}
