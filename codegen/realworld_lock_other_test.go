//go:build !unix

package codegen

import "testing"

// lockCorpusModule is a no-op where flock is not available: two runs from
// one checkout at once may then interfere.
func lockCorpusModule(t *testing.T, dir string) {}
