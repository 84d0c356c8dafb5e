// Package model is what the runtime relies on of a contract model
// (handshake.Contract) before it compiles anything: the checks
// framework.NewContract makes (names, roles, a schema for every message a
// method or topic names, a topic's writer, lost-writer policy, key and
// selectors), the checks that an earlier version's conversions cover what
// it declares (framework.NewCompatibleContract), and the deep copies that
// keep callers from sharing the runtime's model.
//
// It is separate from the root framework package because it is pure
// logic over handshake's types: no server, client or schema compiler, so
// each rule is tested on models alone and has one home.
package model
