//go:build unix

package codegen

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// lockCorpusModule holds an exclusive lock on the corpus module's folder
// until t ends, so that two runs from one checkout (two make test, or go
// test -count=2) take turns writing and building it.
func lockCorpusModule(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
}
