// Package snippets checks the Go snippets of the documentation: its test
// reads every ```go block of README.md and docs/*.md as they are when it
// runs and type-checks each against the packages of this checkout, so
// that a snippet calling an API that changed (a renamed option, a function
// given the wrong arguments) fails make test.
//
// A snippet is most often a fragment: statements that use the reader's own
// names (ctx, srv, a generated package v2) without declaring them. Each is
// checked as a file of its own: declarations as they are, statements as the
// body of a function returning an error, keyed fields as the elements of a
// composite literal; lockstep's packages and the standard library's are
// imported by their names, and so, in the workspace (go.work), are the
// nested modules' the pages use (otellockstep and sdktrace, the sample's
// nsv2 and nhv2). What the snippet does not declare is left open
// (an undeclared name is no error, and nothing is checked of what it
// yields), and so is `…`, which stands for what a reader fills in; every
// use of a declared name or an imported package is checked as the
// compiler checks it. Unused names are no error in a fragment, nor is a
// function without a body, which documents a signature. Blocks whose info
// string names a file (```go cmd/agent/main.go) are the tutorial's, which
// docs/tutorialtest writes and builds as a whole program.
package snippets
