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
// request its resource. A pod template gives every pod that: its labels
// and tolerations (which 2.0.0 carries too), its annotations and its
// containers' resources other than CPU and memory (which travel in the
// core/v1 Pod of 1.0.0 requests only, and decide which extenders with
// managedResources are called).

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

// fromTemplate adds the template's labels and tolerations to pod; the
// scheduler's own labels win where both name one.
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
	for _, tol := range t.Spec.Tolerations {
		pod.Tolerations = append(pod.Tolerations, extv2.TolerationFromCore(tol))
	}
}

// podObject returns the core/v1 Pod of pod that 1.0.0 requests carry:
// [extv2.PodRefToCore]'s, with the template's annotations and its
// containers' requests and limits of resources other than CPU and memory.
func (s *Scheduler) podObject(pod extv2.PodRef) *corev1.Pod {
	p := extv2.PodRefToCore(pod)
	t := s.cfg.PodTemplate
	if t == nil {
		return p
	}
	if len(t.Annotations) > 0 {
		p.Annotations = maps.Clone(t.Annotations)
	}
	main := &p.Spec.Containers[0].Resources
	for _, c := range t.Spec.Containers {
		for name, q := range c.Resources.Requests {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				main.Requests[name] = q
			}
		}
		for name, q := range c.Resources.Limits {
			if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
				if main.Limits == nil {
					main.Limits = corev1.ResourceList{}
				}
				main.Limits[name] = q
			}
		}
	}
	return p
}
