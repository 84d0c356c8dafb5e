// Package golden holds the generator's golden cases: one package per case,
// each a contract, the files lockstep-gen generates from it (committed, so
// that `go build ./...` compiles them and a test fails when they are stale),
// and a test that round-trips instances through the generated types.
//
// Regenerate every case with
//
//	go test ./codegen -run TestGolden -update
//
// or one case with go generate in its folder.
package golden
