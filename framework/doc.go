// Package framework is the lockstep runtime embedded in component binaries:
// the server that takes handshakes and calls, the client that finds a
// compatible peer and blocks until one appears, the error model, and the
// interceptors, clocks and transports that tests inject.
//
// Generated contract packages are thin: they describe their contract with
// [MustContract] and call [HandleUnary] and [CallUnary]. Everything with
// logic lives here, once.
package framework

// Version is the runtime's own version.
const Version = "0.3.0"

// IsAtLeastVersion0_1_0 is referenced by generated code so that a package
// generated for this runtime fails to compile against an older one, instead
// of failing at run time.
const IsAtLeastVersion0_1_0 = true

// IsAtLeastVersion0_2_0 is referenced by the generated code of a contract
// version that derives compatibly from an earlier one (it calls
// [MustCompatibleContract], [ServeCompatible] and their conversions), so
// that it fails to compile against a runtime without them.
//
// The generated code of a contract with a map whose keys are an enum
// type (propertyNames an enum of strings) references it too: its encoders
// and checks call [jsonwire.SortedKeys] and [jsonwire.Has] on such maps,
// which runtimes before 0.2.0 take with string keys only.
const IsAtLeastVersion0_2_0 = true

// IsAtLeastVersion0_3_0 is referenced by the generated fork wiring of a
// contract with forkFrom (its RegisterFork serves the forked topics with
// [ForkServedTopic], its Fork<Old> converts them up with [ConvertTopic]),
// so that it fails to compile against a runtime without them.
const IsAtLeastVersion0_3_0 = true
