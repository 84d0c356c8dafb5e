package kubelet

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// ParseNodeLabels reads the kubelet's --node-labels: comma-separated
// key=value pairs, each key a qualified name (an optional DNS prefix and
// a name: "topology.kubernetes.io/zone") and each value a label value,
// as the real kubelet validates them.
func ParseNodeLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, value, ok := strings.Cut(item, "=")
		if !ok {
			return nil, fmt.Errorf("--node-labels %q: %q is not key=value", s, item)
		}
		if errs := validation.IsQualifiedName(key); len(errs) > 0 {
			return nil, fmt.Errorf("--node-labels: label key %q: %s", key, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
			return nil, fmt.Errorf("--node-labels: label %s value %q: %s", key, value, strings.Join(errs, "; "))
		}
		out[key] = value
	}
	return out, nil
}

// ParseTaints reads the kubelet's --register-with-taints: comma-separated
// key[=value]:effect, the effect NoSchedule, PreferNoSchedule or
// NoExecute, as the real kubelet reads them.
func ParseTaints(s string) ([]corev1.Taint, error) {
	var out []corev1.Taint
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		kv, effect, ok := strings.Cut(item, ":")
		if !ok {
			return nil, fmt.Errorf("--register-with-taints: %q is not key[=value]:effect", item)
		}
		t := corev1.Taint{Effect: corev1.TaintEffect(effect)}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		default:
			return nil, fmt.Errorf("--register-with-taints: %q: invalid taint effect %q, want NoSchedule, PreferNoSchedule or NoExecute", item, effect)
		}
		t.Key, t.Value, _ = strings.Cut(kv, "=")
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return nil, fmt.Errorf("--register-with-taints: %q: key: %s", item, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return nil, fmt.Errorf("--register-with-taints: %q: value: %s", item, strings.Join(errs, "; "))
		}
		id := t.Key + ":" + string(t.Effect)
		if seen[id] {
			return nil, fmt.Errorf("--register-with-taints: %q: taint %s given twice", item, id)
		}
		seen[id] = true
		out = append(out, t)
	}
	return out, nil
}
