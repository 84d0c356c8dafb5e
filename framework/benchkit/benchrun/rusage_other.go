//go:build !unix

package benchrun

import "time"

// processCPU returns zero: this platform has no getrusage, so CPU per call
// is not measured here.
func processCPU() time.Duration { return 0 }
