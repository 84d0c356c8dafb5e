package framework

// ProbeStats is what the process's probers did at the endpoint URL so
// far: dials (checks' and reconnect waiters'), checks that a peer's close
// started, and checks that found nothing listening.
func ProbeStats(rawURL string) (dials, checks, crashes int64) {
	st := processProbers.statsOf(dialAddr(rawURL))
	return st.dials.Load(), st.checks.Load(), st.crashes.Load()
}
