package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
)

// Labels come only from what a watched server serves: a call naming a
// contract, version or method none serves is counted under UnknownLabel,
// and a code outside the closed set likewise.
func TestServerLabelsComeFromWhatIsServed(t *testing.T) {
	m := New(prometheus.NewRegistry(), []string{"rate"}, nil)
	m.WatchServer(&Server{
		Serves: func(contract, version, method string) (bool, bool, bool) {
			c := contract == "nodestatus"
			v := c && version == "1.0.0"
			return c, v, v && method == "Report"
		},
		Sessions: func() []Session { return nil },
		Topics:   func() []Topic { return nil },
	})
	o := m.Server()
	o.Call("nodestatus", "1.0.0", "Report", "", time.Millisecond)
	o.Call("nodestatus", "1.0.0", "Made-up", apierror.CodeNotFound, time.Millisecond)
	o.Call("made-up", "9.9.9", "Report", apierror.Code("made_up_code"), time.Millisecond)

	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("server", "nodestatus", "1.0.0", "Report", "ok")))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("server", "nodestatus", "1.0.0", UnknownLabel, string(apierror.CodeNotFound))))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.calls.WithLabelValues("server", UnknownLabel, UnknownLabel, UnknownLabel, UnknownLabel)))
	assert.Equal(t, 3, testutil.CollectAndCount(m.calls), "no other series")
}

// A handshake's reason label is one of the closed sets, or UnknownLabel.
func TestReasonLabel(t *testing.T) {
	for reason, want := range map[string]string{
		"":                     "none",
		"version_mismatch":     "version_mismatch",
		"draining":             "draining",
		"unauthenticated":      "unauthenticated",
		"a hostile server's":   UnknownLabel,
		"permission_denied":    "permission_denied",
		"fingerprint_mismatch": "fingerprint_mismatch",
	} {
		assert.Equal(t, want, ReasonLabel(reason), "reason %q", reason)
	}
}

// The counting methods of no metrics (a nil Set) count nothing and do not
// fail, so a server without metrics calls them as one with.
func TestNilSetCountsNothing(t *testing.T) {
	var m *Set
	m.SessionLapsed("c")
	m.LimitRefused("rate")
	m.IdempotencyEvicted("idempotency_bytes")
	m.OnBehalfEntry("handshake", "c", "accepted")
}
