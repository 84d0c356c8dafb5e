package admit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/identity"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/sessions"
	"github.com/lockstep-dev/lockstep/framework/internal/wire"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// rec is a session record as the gate reads it.
type rec struct {
	Spec
	inFlight, lastSeen atomic.Int64
	told, resync       atomic.Bool
}

func (s *rec) Token() string { return s.Spec.Token }
func (s *rec) Key() sessions.Key {
	return sessions.Key{Contract: s.Spec.Contract, Instance: s.Client.Instance}
}
func (s *rec) Owner() *identity.Peer { return s.Spec.Owner }
func (s *rec) Usage() *limits.Usage  { return s.Spec.Usage }
func (s *rec) LastSeen() int64       { return s.lastSeen.Load() }
func (s *rec) Contract() string      { return s.Spec.Contract }
func (s *rec) Version() string       { return s.Spec.Version }
func (s *rec) Peer() handshake.Peer  { return s.Client }
func (s *rec) AddCall(n int64) int64 { return s.inFlight.Add(n) }
func (s *rec) Renew(now int64)       { s.lastSeen.Store(now) }
func (s *rec) NoticeDrain()          { s.told.Store(true) }
func (s *rec) TakeResync() bool      { return s.resync.Swap(false) }

// newRec makes a record as Config.NewSession does, seen at its creation.
func newRec(sp Spec) *rec {
	s := &rec{Spec: sp}
	s.lastSeen.Store(sp.Now)
	return s
}

// rig is a gate over a table of its own, without mutual TLS, with what it
// was told recorded.
type rig struct {
	gate     *Gate[*rec]
	table    *sessions.Table[*rec, *identity.Peer]
	draining atomic.Bool
	inFlight atomic.Int64
	arrived  atomic.Int64
	refused  []limits.Name
}

func newRig(t *testing.T, authorize identity.Authorizer) *rig {
	t.Helper()
	cfg := limits.Config{}
	require.NoError(t, cfg.Fill(100))
	cfg.InFlightPerPeer = 8
	rg := &rig{}
	count := func(l limits.Name) { rg.refused = append(rg.refused, l) }
	peers := limits.NewPeers(cfg, 100, count)
	rg.table = sessions.New[*rec](peers, SameOwner)
	rg.gate = New(Config[*rec]{
		Component: "apiserver", Authorizer: authorize, Sessions: rg.table, Limits: peers,
		MaxInFlightPerSession: 1, MaxBodyBytes: 1 << 10, BodyReadTimeout: time.Second,
		Count: count, OnBehalf: func(identity.EntryKind, string, string) {},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: clockwork.NewFakeClock(),
		Draining: rg.draining.Load, Now: func() int64 { return 7 }, Arrived: func() { rg.arrived.Add(1) },
		BeginCall: func() func() {
			rg.inFlight.Add(1)
			return func() { rg.inFlight.Add(-1) }
		},
		Replayed:   func(*rec, string) bool { return false },
		NewSession: newRec, Token: func() string { return "t" },
		Serves:        func(string) (handshake.Server, bool) { return handshake.Server{}, false },
		WriterReports: func(map[string]bool) []wire.TopicWriterReport { return nil },
		Intercept: func(ctx context.Context, _ Call, final func(context.Context) (any, error)) (any, error) {
			return final(ctx)
		},
	})
	return rg
}

// open puts a session of kubelet instance node-1 in the table, as a
// handshake from 127.0.0.1 would have.
func (rg *rig) open(t *testing.T, token string) *rec {
	t.Helper()
	owner := &identity.Peer{Identity: identity.Identity{Component: "kubelet"}}
	sess := newRec(Spec{Token: token, Contract: "nodestatus", Version: "1.0.0", Owner: owner,
		Client: handshake.Peer{Component: "kubelet", Instance: "node-1"}, Usage: rg.gate.cfg.Limits.Usage("kubelet@127.0.0.1")})
	_, err := rg.table.Put(sess)
	require.NoError(t, err)
	return sess
}

// request is a call of the session token, from 127.0.0.1.
func request(token string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/lockstep/nodestatus/1.0.0/ReportStatus", strings.NewReader("{}"))
	r.RemoteAddr = "127.0.0.1:4242"
	if token != "" {
		r.Header.Set(protocol.HeaderSession, token)
	}
	return r
}

func codeOf(err error) apierror.Code { return apierror.CodeOf(err) }

func TestACallIsAdmittedInItsOwnSessionAndCountedUntilDone(t *testing.T) {
	rg := newRig(t, nil)
	sess := rg.open(t, "s1")
	a, err := rg.gate.Admit(request("s1"), Entry{Kind: identity.EntryCall, Contract: "nodestatus", Version: "1.0.0", Call: true})
	require.NoError(t, err)
	assert.Same(t, sess, a.Sess)
	assert.Equal(t, "node-1", a.Peer.Instance, "the peer is the session's instance")
	assert.Same(t, a.Peer, identity.PeerFromContext(a.Ctx))
	assert.Equal(t, int64(7), sess.LastSeen(), "admission renews the session")
	assert.Equal(t, int64(1), sess.inFlight.Load())
	assert.Equal(t, int64(1), rg.inFlight.Load())

	_, err = rg.gate.Admit(request("s1"), Entry{Kind: identity.EntryCall, Contract: "nodestatus", Call: true})
	assert.Equal(t, apierror.CodeResourceExhausted, codeOf(err), "MaxInFlightPerSession is 1")
	assert.Equal(t, []limits.Name{limits.InFlightPerSession}, rg.refused)
	assert.Equal(t, int64(1), sess.inFlight.Load(), "a refused call is counted out again")

	a.Done()
	assert.Equal(t, int64(0), sess.inFlight.Load())
	assert.Equal(t, int64(0), rg.inFlight.Load())
}

func TestARequestOutsideItsSessionIsRefused(t *testing.T) {
	rg := newRig(t, nil)
	sess := rg.open(t, "s1")
	for _, tc := range []struct {
		name string
		// r is the request and e what its path names.
		r    *http.Request
		e    Entry
		want apierror.Code
	}{
		{"no session header", request(""), Entry{Kind: identity.EntryCall, Contract: "nodestatus", Call: true}, apierror.CodeHandshakeRequired},
		{"unknown token", request("s2"), Entry{Kind: identity.EntryCall, Contract: "nodestatus", Call: true}, apierror.CodeHandshakeRequired},
		{"another contract", request("s1"), Entry{Kind: identity.EntryCall, Contract: "podbinding", Call: true}, apierror.CodeHandshakeRequired},
		{"another version", request("s1"), Entry{Kind: identity.EntryCall, Contract: "nodestatus", Version: "2.0.0", Call: true}, apierror.CodeIncompatiblePeer},
	} {
		_, err := rg.gate.Admit(tc.r, tc.e)
		assert.Equal(t, tc.want, codeOf(err), tc.name)
		assert.Equal(t, int64(0), rg.inFlight.Load(), "%s: nothing refused stays counted", tc.name)
		assert.Equal(t, int64(0), sess.inFlight.Load(), "%s: nothing refused stays counted in the session", tc.name)
	}
	r := request("s1")
	r.Header.Set(protocol.HeaderOnBehalfOf, "kubelet")
	_, err := rg.gate.Admit(r, Entry{Kind: identity.EntryCall, Contract: "nodestatus", Call: true})
	assert.Equal(t, apierror.CodeInvalidArgument, codeOf(err), "a call may not be asked on behalf of another")
	assert.Equal(t, int64(0), rg.inFlight.Load(), "nothing refused stays counted")
	assert.Equal(t, int64(0), sess.inFlight.Load(), "nothing refused stays counted in the session")
}

func TestADrainingServerRefusesCallsAndTellsTheSession(t *testing.T) {
	rg := newRig(t, nil)
	sess := rg.open(t, "s1")
	rg.draining.Store(true)
	r := request("s1")
	r.Header.Set(protocol.HeaderIdempotencyKey, "k1")
	_, err := rg.gate.Admit(r, Entry{Kind: identity.EntryCall, Contract: "nodestatus", Call: true})
	assert.Equal(t, apierror.CodeUnavailable, codeOf(err))
	assert.True(t, errors.As(err, new(unrecordedRefusal)), "a keyed call the server holds no record of is said unrecorded")
	assert.True(t, sess.told.Load())
	assert.Equal(t, int64(1), rg.arrived.Load(), "the arrival restarts the drain's quiet period")
	assert.Equal(t, int64(0), rg.inFlight.Load())

	w := httptest.NewRecorder()
	rg.gate.Refuse(w, request("s1"), err)
	assert.Equal(t, "1", w.Header().Get(protocol.HeaderNotProcessed))
	assert.Equal(t, "1", w.Header().Get(protocol.HeaderUnrecorded))
	assert.Equal(t, "1", w.Header().Get(protocol.HeaderDraining))
	assert.Equal(t, "close", w.Header().Get("Connection"))

	a, err := rg.gate.Admit(request(""), Entry{Kind: identity.EntryPlain})
	require.NoError(t, err, "a plain call is served while the server drains")
	assert.True(t, a.Draining)
	a.Done()
}

func TestTheAuthorizerSeesTheEntriesThatAskForIt(t *testing.T) {
	var seen []identity.Entry
	rg := newRig(t, identity.AuthorizerFunc(func(_ context.Context, e *identity.Entry) error {
		seen = append(seen, *e)
		if e.Topic == "secrets" {
			return errors.New("no")
		}
		return nil
	}))
	rg.open(t, "s1")
	a, err := rg.gate.Admit(request("s1"), Entry{Kind: identity.EntryCall, Contract: "nodestatus"})
	require.NoError(t, err)
	a.Done()
	assert.Empty(t, seen, "a call is authorized once its request is decoded, not here")

	a, err = rg.gate.Admit(request("s1"), Entry{Kind: identity.EntryWatch, Contract: "nodestatus", Topic: "pods", Authorize: true})
	require.NoError(t, err)
	a.Done()
	require.Len(t, seen, 1)
	assert.Equal(t, identity.EntryWatch, seen[0].Kind)
	assert.Equal(t, "1.0.0", seen[0].Version)
	assert.Equal(t, "kubelet", seen[0].Peer.Identity.Component)

	_, err = rg.gate.Admit(request("s1"), Entry{Kind: identity.EntryWatch, Contract: "nodestatus", Topic: "secrets", Authorize: true})
	assert.Equal(t, apierror.CodePermissionDenied, codeOf(err), "an uncoded refusal is permission_denied")
}

func TestASessionIsUsedByTheIdentityThatMadeItOnly(t *testing.T) {
	node1 := &identity.Peer{Identity: identity.Identity{Component: "kubelet", Name: "node-1"}, Authenticated: true}
	node2 := &identity.Peer{Identity: identity.Identity{Component: "kubelet", Name: "node-2"}, Authenticated: true}
	claim := &identity.Peer{Identity: identity.Identity{Component: "kubelet"}}
	assert.True(t, SameOwner(node1, node1))
	assert.False(t, SameOwner(node1, node2))
	assert.False(t, SameOwner(node1, claim), "an unauthenticated peer may not use an identity's session")
	assert.False(t, SameOwner(claim, node1), "nor an identity a session made without one")
	assert.True(t, SameOwner(nil, claim))
}

func TestALimitsKeyIsTheIdentityElseTheClaimAtItsAddress(t *testing.T) {
	r := request("")
	node1 := &identity.Peer{Identity: identity.Identity{Component: "kubelet", Name: "node-1"}, Authenticated: true}
	assert.Equal(t, "lockstep://kubelet/node-1", LimitsKey(node1, r))
	assert.Equal(t, "kubelet@127.0.0.1", LimitsKey(&identity.Peer{Identity: identity.Identity{Component: "kubelet"}}, r))
}

func TestAHeartbeatRenewsTheSessionsItNamesAndSaysWhichAreLost(t *testing.T) {
	rg := newRig(t, nil)
	sess := rg.open(t, "s1")
	sess.resync.Store(true)
	r := httptest.NewRequest(http.MethodPost, protocol.PathHeartbeat, strings.NewReader(`{"sessions":["s1","gone"]}`))
	r.RemoteAddr = "127.0.0.1:4242"
	w := httptest.NewRecorder()
	rg.gate.ServeHeartbeat(w, r)
	require.Equal(t, http.StatusOK, w.Code, w.Body.String())
	assert.JSONEq(t, `{"lost":["gone"],"resync":["s1"]}`, w.Body.String())
	assert.Equal(t, int64(7), sess.LastSeen())
	assert.False(t, sess.resync.Load(), "the resync is asked once")
}
