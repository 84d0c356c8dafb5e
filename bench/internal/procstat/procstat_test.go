package procstat

import (
	"sync"
	"testing"
)

var sink []*[64]byte

func TestSinceCountsAllocationsAndGoroutineRuns(t *testing.T) {
	s := Take()
	for range 1000 {
		sink = append(sink, new([64]byte))
	}
	var wg sync.WaitGroup
	for range 800 {
		wg.Add(1)
		go wg.Done()
	}
	wg.Wait()
	d := s.Since()
	sink = nil
	if d.Objects < 1000 || d.Bytes < 64*1000 {
		t.Errorf("allocated %d objects, %d bytes; want at least 1000 and 64000", d.Objects, d.Bytes)
	}
	if d.Runs < 400 {
		t.Errorf("%d goroutine runs; want about the 800 goroutines started", d.Runs)
	}
	if d.GCShare < 0 || d.GCShare > 1 {
		t.Errorf("GC share %v outside [0, 1]", d.GCShare)
	}
}
