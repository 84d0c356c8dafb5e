package kube

import (
	"errors"

	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// DecodeStrict decodes a YAML (or JSON) document into v as Kubernetes
// decodes its objects and component configuration with strict field
// validation (sigs.k8s.io/json, the API server's and kube-scheduler's
// decoder): member names match case-sensitively, and an unknown or
// duplicated field is an error.
func DecodeStrict(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	return errors.Join(append([]error{err}, strict...)...)
}
