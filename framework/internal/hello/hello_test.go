package hello

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/probe"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

func refusal(reason handshake.Reason) *apierror.Error {
	r := &handshake.Refusal{Code: handshake.Code(apierror.CodeIncompatiblePeer), Reason: reason}
	return apierror.NewError(apierror.CodeIncompatiblePeer, r).WithDetails(r)
}

func TestARefusalIsDecodedOnceAndHeldOnlyIfItMayChange(t *testing.T) {
	h := RefusedWith[int](refusal(handshake.ReasonVersionMismatch))
	assert.Equal(t, Refused, h.State)
	assert.True(t, h.Holdable())
	outcome, reason := h.Outcome()
	assert.Equal(t, "refused", outcome)
	assert.Equal(t, string(handshake.ReasonVersionMismatch), reason)

	h = RefusedWith[int](refusal(handshake.ReasonDraining))
	assert.Equal(t, Draining, h.State, "a draining server's refusal leaves the endpoint draining")
	assert.False(t, h.Holdable())

	h = RefusedWith[int](apierror.Errorf(apierror.CodeNotFound, "no such contract"))
	assert.Nil(t, h.Refusal)
	assert.False(t, h.Holdable())
	outcome, reason = h.Outcome()
	assert.Equal(t, "error", outcome)
	assert.Equal(t, string(apierror.CodeNotFound), reason)

	rejected := Result[int]{State: Refused, Err: RejectedWelcome{Err: refusal(handshake.ReasonReleaseConstraint)},
		Refusal: &handshake.Refusal{Reason: handshake.ReasonReleaseConstraint}, Rejected: true}
	assert.False(t, rejected.Holdable(), "the client's own rejection does not change with the server")

	outcome, _ = Failed[int](Unreachable, context.DeadlineExceeded).Outcome()
	assert.Equal(t, "unreachable", outcome)
}

func TestEveryStateHasItsMovesAndStoppedNone(t *testing.T) {
	for _, s := range []State{Connecting, Ready, Refused, Unreachable, Draining} {
		assert.True(t, slices.Contains(Moves[s], Stopped), s)
		assert.False(t, slices.Contains(Moves[s], Connecting) && s != Ready, "only a lost session goes back to connecting: %s", s)
	}
	assert.Empty(t, Moves[Stopped])
}

func TestDrainingPaceGrowsFromTheBackoffCeilingToItsCap(t *testing.T) {
	b := probe.Backoff{Base: 5 * time.Millisecond, Max: 100 * time.Millisecond, Multiplier: 1.6} // no jitter: the delays are exact
	assert.Equal(t, 100*time.Millisecond, DrainingPace(b, 0))
	assert.Equal(t, 200*time.Millisecond, DrainingPace(b, 1))
	assert.Equal(t, MaxDrainingPace, DrainingPace(b, 10))
}

func TestAskReadsAWelcomeOrARefusal(t *testing.T) {
	var waits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		waits = append(waits, r.URL.Query().Get("wait"))
		var h handshake.Hello
		if err := json.NewDecoder(r.Body).Decode(&h); err != nil || h.Contract != "nodestatus" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", protocol.ContentTypeJSON)
		if h.Instance == "refused" {
			e := refusal(handshake.ReasonVersionMismatch)
			w.WriteHeader(e.Code().HTTPStatus())
			_ = json.NewEncoder(w).Encode(apierror.ToWire(e))
			return
		}
		_ = json.NewEncoder(w).Encode(handshake.Welcome{Session: "s1", Version: "v1"})
	}))
	defer srv.Close()

	w, h := Ask[int](context.Background(), Server{URL: srv.URL, HC: srv.Client(), Limit: 1 << 20}, handshake.Hello{Contract: "nodestatus", Instance: "a"}, "")
	require.NoError(t, h.Err)
	assert.Equal(t, Ready, h.State)
	assert.Equal(t, "s1", w.Session)

	_, h = Ask[int](context.Background(), Server{URL: srv.URL, HC: srv.Client(), Limit: 1 << 20}, handshake.Hello{Contract: "nodestatus", Instance: "refused"}, "30s")
	assert.Equal(t, Refused, h.State)
	require.NotNil(t, h.Refusal)
	assert.True(t, h.Holdable())
	assert.Equal(t, []string{"", "30s"}, waits)

	srv.Close()
	_, h = Ask[int](context.Background(), Server{URL: srv.URL, HC: srv.Client(), Limit: 1 << 20}, handshake.Hello{Contract: "nodestatus"}, "")
	assert.Equal(t, Unreachable, h.State)
}

func TestWhyNamesTheStateAndTheRefusalOnce(t *testing.T) {
	assert.Equal(t, "http://a ready", Why("http://a", Ready, context.Canceled))
	assert.Equal(t, "http://a connecting", Why("http://a", Connecting, nil))
	assert.Equal(t, "http://a unreachable: connection refused", Why("http://a", Unreachable, errors.New("connection refused")))
	r := &handshake.Refusal{Code: handshake.Code(apierror.CodeIncompatiblePeer), Reason: handshake.ReasonVersionMismatch, Message: "a offers v2, b speaks v1"}
	refused := apierror.NewError(apierror.CodeIncompatiblePeer, r).WithDetails(r)
	assert.Equal(t, "http://a refused (version_mismatch): a offers v2, b speaks v1", Why("http://a", Refused, refused))
	r.Reason = handshake.ReasonDraining
	draining := apierror.NewError(apierror.CodeUnavailable, r).WithDetails(r)
	assert.Equal(t, "http://a draining: a offers v2, b speaks v1", Why("http://a", Draining, draining), "the reason the state says is not repeated")
	assert.Equal(t, "http://a refused (not_found): no contract x", Why("http://a", Refused, apierror.Errorf(apierror.CodeNotFound, "no contract x")))
}
