package ready

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMissingNamesTheDrainPeersAndFailingChecksInOrder(t *testing.T) {
	draining := true
	sessions := map[string]int{"nodestatus": 1}
	c := &Checks{Draining: func() bool { return draining }, RequirePeers: []string{"nodestatus", "leases"},
		Sessions: func(contract string) int { return sessions[contract] }}
	c.Add("zeta", func() error { return errors.New("down") })
	c.Add("alpha", func() error { return errors.New("late") })
	c.Add("ok", func() error { return nil })
	assert.Equal(t, []string{"draining", "no live leases session", "alpha: late", "zeta: down"}, c.Missing())

	rec := httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "not ready: draining; no live leases session; alpha: late; zeta: down\n", rec.Body.String())

	draining, sessions["leases"] = false, 1
	c.Add("zeta", func() error { return nil })
	c.Add("alpha", func() error { return nil })
	assert.NoError(t, c.Err())
	rec = httptest.NewRecorder()
	c.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok\n", rec.Body.String())
}
