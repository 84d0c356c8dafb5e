// Package identity is who a peer is and what mutual TLS proves about it:
// the identity a certificate names (lockstep://<component>/<name>), the
// mutual TLS material a component presents and trusts, reloaded as its
// files change, and the verification of a peer's certificate chain, cached
// by certificate. It is separate from the runtime because none of it needs
// a server, a session or a call: the framework's admission step asks it who
// a request's peer is, and decides the rest itself. Package framework
// exposes it as [framework.Credentials], [framework.MTLSFiles] and
// [framework.Identity].
package identity
