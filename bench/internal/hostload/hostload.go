// Package hostload reads how busy the whole host is from /proc/stat, so a
// benchmark round can tell whether other work shared the machine while it
// ran: the share of CPU time that was idle and the share stolen by the
// hypervisor between two samples.
package hostload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Sample is the host's cumulative CPU time counters, in clock ticks, from
// the aggregate "cpu" line of /proc/stat.
type Sample struct {
	// Total is every counter added up; Idle is idle plus iowait; Steal is
	// time stolen by the hypervisor.
	Total, Idle, Steal uint64
}

// Load is what happened between two samples.
type Load struct {
	// Idle and Steal are shares of the CPU time that passed, 0 to 1.
	Idle, Steal float64
}

// String formats the load as percentages.
func (l Load) String() string {
	return fmt.Sprintf("%.0f %% idle, %.1f %% steal", 100*l.Idle, 100*l.Steal)
}

// Read samples /proc/stat.
func Read() (Sample, error) {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Sample{}, err
	}
	return Parse(raw)
}

// Parse reads the aggregate "cpu" line of a /proc/stat document: user nice
// system idle iowait irq softirq steal guest guest_nice. Guest time is
// already counted in user and nice, so it is not added again.
func Parse(stat []byte) (Sample, error) {
	sc := bufio.NewScanner(bytes.NewReader(stat))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 5 {
			return Sample{}, fmt.Errorf("hostload: the cpu line has %d fields, want at least 4 counters", len(fields)-1)
		}
		var v [10]uint64
		for i, f := range fields[1:min(len(fields), 11)] {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return Sample{}, fmt.Errorf("hostload: cpu counter %d: %w", i, err)
			}
			v[i] = n
		}
		var s Sample
		for i := range 8 { // guest and guest_nice are inside user and nice
			s.Total += v[i]
		}
		s.Idle = v[3] + v[4]
		s.Steal = v[7]
		return s, nil
	}
	return Sample{}, errors.New("hostload: no aggregate cpu line in /proc/stat")
}

// Between returns the load from a to b; a zero Load when no time passed.
func Between(a, b Sample) Load {
	total := float64(b.Total - a.Total)
	if b.Total <= a.Total {
		return Load{}
	}
	return Load{Idle: float64(b.Idle-a.Idle) / total, Steal: float64(b.Steal-a.Steal) / total}
}

// Measure samples the host over window and returns its load then.
func Measure(window time.Duration) (Load, error) {
	a, err := Read()
	if err != nil {
		return Load{}, err
	}
	time.Sleep(window)
	b, err := Read()
	if err != nil {
		return Load{}, err
	}
	return Between(a, b), nil
}
