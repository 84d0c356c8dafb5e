package hostload

import (
	"math"
	"runtime"
	"testing"
)

func TestParseReadsTheAggregateLineAndLeavesGuestTimeOut(t *testing.T) {
	stat := []byte("cpu  100 5 50 800 20 1 2 7 30 0\ncpu0 50 2 25 400 10 0 1 3 15 0\nintr 1 2 3\n")
	s, err := Parse(stat)
	if err != nil {
		t.Fatal(err)
	}
	// user+nice+system+idle+iowait+irq+softirq+steal; guest is in user.
	if want := (Sample{Total: 100 + 5 + 50 + 800 + 20 + 1 + 2 + 7, Idle: 820, Steal: 7}); s != want {
		t.Fatalf("Parse = %+v, want %+v", s, want)
	}
}

func TestParseRejectsMalformedDocuments(t *testing.T) {
	for name, doc := range map[string]string{
		"no cpu line":   "cpu0 1 2 3 4\n",
		"short line":    "cpu 1 2 3\n",
		"not a counter": "cpu 1 2 x 4 5\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: Parse accepted %q", name, doc)
		}
	}
}

func TestBetweenIsTheShareOfElapsedTicks(t *testing.T) {
	a := Sample{Total: 1000, Idle: 500, Steal: 10}
	b := Sample{Total: 1200, Idle: 650, Steal: 20}
	l := Between(a, b)
	if math.Abs(l.Idle-0.75) > 1e-9 || math.Abs(l.Steal-0.05) > 1e-9 {
		t.Fatalf("Between = %+v, want 75 %% idle and 5 %% steal", l)
	}
	if got := Between(b, b); got != (Load{}) {
		t.Fatalf("Between with no time passed = %+v, want zero", got)
	}
}

func TestReadSamplesThisHost(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("/proc/stat is Linux's")
	}
	s, err := Read()
	if err != nil {
		t.Fatal(err)
	}
	if s.Total == 0 || s.Idle > s.Total {
		t.Fatalf("Read = %+v: no ticks counted, or more idle than total", s)
	}
}
