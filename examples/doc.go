// Package examples holds programs that show lockstep beside the Kubernetes
// libraries a control-plane component is usually built with. It is a module
// of its own so that controller-runtime and client-go stay out of the
// framework's go.mod; each folder is one example.
package examples
