// Package framework is the lockstep runtime embedded in component binaries:
// the server that takes handshakes and calls, the client that finds a
// compatible peer and blocks until one appears, the error model, and the
// interceptors, clocks and transports that tests inject.
//
// Generated contract packages are thin: they describe their contract with
// [MustContract] and call [HandleUnary] and [CallUnary]. Everything with
// logic lives here, once.
package framework
