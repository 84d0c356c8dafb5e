// Package handshake is the pure negotiation logic of lockstep and its wire
// types: the hello a client sends, the welcome or refusal a server answers,
// the offers each side can speak, and the fingerprint that proves two sides
// mean the same contract.
//
// It does no I/O and keeps no state, so every rule can be table-tested and
// fuzzed. The framework package owns HTTP, sessions and retries; this package
// only decides.
//
// Negotiation picks the highest version present in both offers whose
// fingerprints are equal. Everything that stops two sides from agreeing is a
// [Refusal] with a [Reason] and a sentence a person can act on.
//
// A fingerprint ([Fingerprint]) is "lsfp1:" and the SHA-256 of a contract's
// canonical form ([Canonical]): RFC 8785 JSON of its name, version, roles,
// methods, topics and schemas, with schema annotations left out. The canonical
// form is a protocol promise, pinned by golden vectors in
// testdata/fingerprint; changing it means a new prefix.
package handshake
