package conformance

import (
	"fmt"
	"io"
)

// Report writes one line per result (PASS, FAIL with the reason, SKIP with
// why) and a last line "N/M cases pass", and returns whether every case
// passed.
func Report(w io.Writer, side string, results []Result) bool {
	passed, skipped := 0, 0
	for _, r := range results {
		switch {
		case r.Skipped != "":
			skipped++
			fmt.Fprintf(w, "SKIP %s: %s\n", r.Case, r.Skipped)
		case r.Err != nil:
			fmt.Fprintf(w, "FAIL %s: %v\n", r.Case, r.Err)
		default:
			passed++
			fmt.Fprintf(w, "PASS %s\n", r.Case)
		}
	}
	fmt.Fprintf(w, "%d/%d %s cases pass", passed, len(results), side)
	if skipped > 0 {
		fmt.Fprintf(w, " (%d skipped)", skipped)
	}
	fmt.Fprintln(w)
	return passed == len(results)
}
