package framework_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"
)

// The grants contract in three compatible versions: 1.1.0 adds an optional
// priority to a grant, an optional reason to its result and a method,
// Revoke; 1.2.0 adds an optional zone to a grant. Objects are open, so
// each change is compatible both ways and each version derives from the
// one before it.

type GrantV10 struct {
	Tenant string `json:"tenant"`
	Amount int64  `json:"amount"`
}

type ResultV10 struct {
	OK bool `json:"ok"`
}

type GrantV11 struct {
	Tenant   string `json:"tenant"`
	Amount   int64  `json:"amount"`
	Priority *int64 `json:"priority,omitempty"`
}

type ResultV11 struct {
	OK     bool    `json:"ok"`
	Reason *string `json:"reason,omitempty"`
}

type GrantV12 struct {
	Tenant   string  `json:"tenant"`
	Amount   int64   `json:"amount"`
	Priority *int64  `json:"priority,omitempty"`
	Zone     *string `json:"zone,omitempty"`
}

const grantV10Schema = `{"type":"object","required":["tenant","amount"],
	"properties":{"tenant":{"type":"string","minLength":1},"amount":{"type":"integer","minimum":0}}}`

const grantV11Schema = `{"type":"object","required":["tenant","amount"],
	"properties":{"tenant":{"type":"string","minLength":1},"amount":{"type":"integer","minimum":0},"priority":{"type":"integer"}}}`

const grantV12Schema = `{"type":"object","required":["tenant","amount"],
	"properties":{"tenant":{"type":"string","minLength":1},"amount":{"type":"integer","minimum":0},"priority":{"type":"integer"},
	"zone":{"type":"string"}}}`

const resultV10Schema = `{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"}}}`

const resultV11Schema = `{"type":"object","required":["ok"],"properties":{"ok":{"type":"boolean"},"reason":{"type":"string"}}}`

func grantsModel(version, grant, result string, revoke bool) handshake.Contract {
	m := handshake.Contract{
		Name: "grants", Version: version, Server: "controller", Client: "agent",
		Methods: map[string]handshake.Method{
			"Request":     {Request: "Grant", Response: "Result"},
			"RequestMany": {Request: "Grant", Response: "Result", Batch: true},
		},
		Topics: map[string]handshake.Topic{"Grants": {Object: "Grant", Key: "tenant",
			Writer: handshake.RoleServer, LostWriter: handshake.LostWriterDelete}},
		Schemas: map[string]json.RawMessage{"Grant": json.RawMessage(grant), "Result": json.RawMessage(result)},
	}
	if revoke {
		m.Methods["Revoke"] = handshake.Method{Request: "Grant", Response: "Result"}
	}
	return m
}

// convertJSON converts through JSON, as a generated conversion does for
// types that hold the same JSON: members one side lacks are dropped or
// left absent.
func convertJSON[From, To any](in *From) (*To, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out := new(To)
	return out, json.Unmarshal(b, out)
}

var (
	grantsV10 = framework.MustContract(grantsModel("1.0.0", grantV10Schema, resultV10Schema, false))
	grantsV11 = framework.MustCompatibleContract(grantsModel("1.1.0", grantV11Schema, resultV11Schema, true), framework.Compatible{
		Contract: grantsV10,
		Methods: map[string]framework.CompatibleMethod{
			"Request": framework.ConvertCompatibleMethod(convertJSON[GrantV10, GrantV11], convertJSON[GrantV11, GrantV10],
				convertJSON[ResultV10, ResultV11], convertJSON[ResultV11, ResultV10]),
			"RequestMany": framework.ConvertCompatibleMethod(convertJSON[GrantV10, GrantV11], convertJSON[GrantV11, GrantV10],
				convertJSON[ResultV10, ResultV11], convertJSON[ResultV11, ResultV10]),
		},
		Topics: map[string]framework.CompatibleTopic{
			"Grants": framework.ConvertCompatibleTopic(convertJSON[GrantV10, GrantV11], convertJSON[GrantV11, GrantV10]),
		},
	})
	grantsV12 = framework.MustCompatibleContract(grantsModel("1.2.0", grantV12Schema, resultV11Schema, true), framework.Compatible{
		Contract: grantsV11,
		Methods: map[string]framework.CompatibleMethod{
			"Request": framework.ConvertCompatibleMethod(convertJSON[GrantV11, GrantV12], convertJSON[GrantV12, GrantV11],
				convertJSON[ResultV11, ResultV11], convertJSON[ResultV11, ResultV11]),
			"RequestMany": framework.ConvertCompatibleMethod(convertJSON[GrantV11, GrantV12], convertJSON[GrantV12, GrantV11],
				convertJSON[ResultV11, ResultV11], convertJSON[ResultV11, ResultV11]),
			"Revoke": framework.ConvertCompatibleMethod(convertJSON[GrantV11, GrantV12], convertJSON[GrantV12, GrantV11],
				convertJSON[ResultV11, ResultV11], convertJSON[ResultV11, ResultV11]),
		},
		Topics: map[string]framework.CompatibleTopic{
			"Grants": framework.ConvertCompatibleTopic(convertJSON[GrantV11, GrantV12], convertJSON[GrantV12, GrantV11]),
		},
	})
)

// seen records what a server's handlers received.
type seen struct {
	mu     sync.Mutex
	grants []string
}

func (s *seen) add(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.grants = append(s.grants, fmt.Sprintf(format, args...))
}

func (s *seen) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.grants...)
}

// startGrants starts a controller of grants at version c (1.0.0, 1.1.0 or
// 1.2.0) on 127.0.0.1, registered as a generated Register does: its own
// handlers, then ServeCompatible. Its handlers answer with a reason where
// the version has one.
func startGrants(t *testing.T, c *framework.Contract, rec *seen) *frameworktest.Running {
	t.Helper()
	cfg := framework.ServerConfig{Component: "controller", Release: "1.31.0"}
	return frameworktest.StartServer(t, cfg, func(s *framework.Server) {
		switch c {
		case grantsV10:
			h := func(_ context.Context, g *GrantV10) (*ResultV10, error) {
				rec.add("1.0.0 %s %d", g.Tenant, g.Amount)
				return &ResultV10{OK: true}, nil
			}
			framework.HandleUnary(s, c, "Request", h)
			framework.HandleBatch(s, c, "RequestMany", h)
		case grantsV11:
			h := func(_ context.Context, g *GrantV11) (*ResultV11, error) {
				rec.add("1.1.0 %s %d priority=%v", g.Tenant, g.Amount, g.Priority != nil)
				reason := "granted at 1.1.0"
				return &ResultV11{OK: true, Reason: &reason}, nil
			}
			framework.HandleUnary(s, c, "Request", h)
			framework.HandleBatch(s, c, "RequestMany", h)
			framework.HandleUnary(s, c, "Revoke", h)
		case grantsV12:
			h := func(_ context.Context, g *GrantV12) (*ResultV11, error) {
				rec.add("1.2.0 %s %d priority=%v zone=%v", g.Tenant, g.Amount, g.Priority != nil, g.Zone != nil)
				reason := "granted at 1.2.0"
				return &ResultV11{OK: true, Reason: &reason}, nil
			}
			framework.HandleUnary(s, c, "Request", h)
			framework.HandleBatch(s, c, "RequestMany", h)
			framework.HandleUnary(s, c, "Revoke", h)
		}
		framework.ServeCompatible(s, c)
		// A server serves every topic it declares: the Grants topic in
		// each version's own type, its earlier forms converted down.
		switch c {
		case grantsV10:
			framework.ServeTopic[GrantV10](s, c, "Grants")
		case grantsV11:
			framework.ServeTopic[GrantV11](s, c, "Grants")
		case grantsV12:
			framework.ServeTopic[GrantV12](s, c, "Grants")
		}
	})
}

func grantsClient(t *testing.T, c *framework.Contract, url string) *framework.Client {
	t.Helper()
	return frameworktest.NewClient(t, c, framework.ClientConfig{Component: "agent", Release: "1.31.0", Endpoints: []string{url}})
}

// agreed returns the versions the server's sessions agreed.
func agreed(srv *frameworktest.Running) []string {
	var out []string
	for _, s := range srv.Server.Sessions() {
		out = append(out, s.Version)
	}
	return out
}

func TestCompatibleContractSpeaksItsChain(t *testing.T) {
	t.Parallel()
	assert.Empty(t, grantsV10.Compatible())
	assert.Equal(t, []*framework.Contract{grantsV10}, grantsV11.Compatible())
	assert.Equal(t, []*framework.Contract{grantsV11, grantsV10}, grantsV12.Compatible())
}

// TestCompatibleVersionsCallEachOther runs a 1.1.0 client against a 1.0.0
// server and a 1.0.0 client against a 1.1.0 server, over HTTP on
// 127.0.0.1, with no fork configured on either side: each session agrees
// on 1.0.0, members 1.0.0 lacks are dropped going down and absent going
// up, and a method 1.0.0 lacks is never sent to it.
func TestCompatibleVersionsCallEachOther(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	t.Run("new client, old server", func(t *testing.T) {
		var rec seen
		srv := startGrants(t, grantsV10, &rec)
		client := grantsClient(t, grantsV11, srv.URL)
		priority := int64(5)
		res, err := framework.CallUnary[GrantV11, ResultV11](ctx, client, "Request", &GrantV11{Tenant: "a", Amount: 2, Priority: &priority})
		require.NoError(t, err)
		assert.True(t, res.OK)
		assert.Nil(t, res.Reason, "1.0.0 has no reason: absent going up")
		results, err := framework.CallBatch[GrantV11, ResultV11](ctx, client, "RequestMany", []*GrantV11{{Tenant: "b", Amount: 1}, {Tenant: "c", Amount: 3}})
		require.NoError(t, err)
		require.Len(t, results, 2)
		assert.True(t, results[1].Value.OK)
		_, err = framework.CallUnary[GrantV11, ResultV11](ctx, client, "Revoke", &GrantV11{Tenant: "a", Amount: 1}, framework.FailFast())
		require.Error(t, err, "1.0.0 declares no Revoke: the call is never sent to it")
		assert.Equal(t, []string{"1.0.0 a 2", "1.0.0 b 1", "1.0.0 c 3"}, rec.all())
		assert.Equal(t, []string{"1.0.0"}, agreed(srv))
	})

	t.Run("old client, new server", func(t *testing.T) {
		var rec seen
		srv := startGrants(t, grantsV11, &rec)
		client := grantsClient(t, grantsV10, srv.URL)
		res, err := framework.CallUnary[GrantV10, json.RawMessage](ctx, client, "Request", &GrantV10{Tenant: "a", Amount: 2})
		require.NoError(t, err)
		assert.JSONEq(t, `{"ok":true}`, string(*res), "1.0.0 has no reason: dropped going down")
		results, err := framework.CallBatch[GrantV10, ResultV10](ctx, client, "RequestMany", []*GrantV10{{Tenant: "b", Amount: 1}})
		require.NoError(t, err)
		require.Len(t, results, 1)
		assert.True(t, results[0].Value.OK)
		assert.Equal(t, []string{"1.1.0 a 2 priority=false", "1.1.0 b 1 priority=false"}, rec.all())
		assert.Equal(t, []string{"1.0.0"}, agreed(srv))
	})

	t.Run("new client, new server", func(t *testing.T) {
		var rec seen
		srv := startGrants(t, grantsV11, &rec)
		client := grantsClient(t, grantsV11, srv.URL)
		priority := int64(5)
		res, err := framework.CallUnary[GrantV11, ResultV11](ctx, client, "Request", &GrantV11{Tenant: "a", Amount: 2, Priority: &priority})
		require.NoError(t, err)
		require.NotNil(t, res.Reason)
		assert.Equal(t, "granted at 1.1.0", *res.Reason)
		assert.Equal(t, []string{"1.1.0 a 2 priority=true"}, rec.all())
		assert.Equal(t, []string{"1.1.0"}, agreed(srv), "the highest version both speak")
	})
}

// TestCompatibleChain runs 1.2.0 against 1.0.0 both ways: a server serves
// the whole chain, converting 1.0.0 calls up through 1.1.0, and a client
// converts its calls down through it.
func TestCompatibleChain(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	var rec seen
	newServer := startGrants(t, grantsV12, &rec)
	results, err := framework.CallBatch[GrantV10, ResultV10](ctx, grantsClient(t, grantsV10, newServer.URL), "RequestMany",
		[]*GrantV10{{Tenant: "a", Amount: 1}, {Tenant: "b", Amount: 2}})
	require.NoError(t, err)
	require.Len(t, results, 2)
	assert.True(t, results[0].Value.OK && results[1].Value.OK)
	assert.Equal(t, []string{"1.2.0 a 1 priority=false zone=false", "1.2.0 b 2 priority=false zone=false"}, rec.all())

	var oldRec seen
	oldServer := startGrants(t, grantsV10, &oldRec)
	zone := "z1"
	res, err := framework.CallUnary[GrantV12, ResultV11](ctx, grantsClient(t, grantsV12, oldServer.URL), "Request",
		&GrantV12{Tenant: "c", Amount: 3, Zone: &zone})
	require.NoError(t, err)
	assert.True(t, res.OK)
	assert.Nil(t, res.Reason)
	assert.Equal(t, []string{"1.0.0 c 3"}, oldRec.all())
	assert.Equal(t, []string{"1.0.0"}, agreed(oldServer))
}

// TestCompatibleTopicServedToEarlierWatchers watches a 1.2.0 server's
// topic from 1.0.0 and 1.1.0 clients: the server serves each earlier form,
// converted down along the chain.
func TestCompatibleTopicServedToEarlierWatchers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var grants *framework.TopicWriter[GrantV12]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "controller", Release: "1.31.0"}, func(s *framework.Server) {
		h := func(context.Context, *GrantV12) (*ResultV11, error) { return &ResultV11{OK: true}, nil }
		framework.HandleUnary(s, grantsV12, "Request", h)
		framework.HandleBatch(s, grantsV12, "RequestMany", h)
		framework.HandleUnary(s, grantsV12, "Revoke", h)
		framework.ServeCompatible(s, grantsV12)
		grants = framework.ServeTopic[GrantV12](s, grantsV12, "Grants")
	})
	v10, err := framework.Watch[json.RawMessage](ctx, grantsClient(t, grantsV10, srv.URL), "Grants", framework.InformerHandlers[json.RawMessage]{})
	require.NoError(t, err)
	t.Cleanup(v10.Stop)
	v11, err := framework.Watch[json.RawMessage](ctx, grantsClient(t, grantsV11, srv.URL), "Grants", framework.InformerHandlers[json.RawMessage]{})
	require.NoError(t, err)
	t.Cleanup(v11.Stop)

	priority, zone := int64(7), "z1"
	require.NoError(t, grants.Set(&GrantV12{Tenant: "a", Amount: 1, Priority: &priority, Zone: &zone}))
	require.NoError(t, grants.Set(&GrantV12{Tenant: "b", Amount: 2}))
	require.NoError(t, grants.Delete("b"))
	require.Eventually(t, func() bool {
		a10, ok10 := v10.Get("a")
		a11, ok11 := v11.Get("a")
		return ok10 && ok11 && v10.Len() == 1 && v11.Len() == 1 &&
			string(*a10) == `{"tenant":"a","amount":1}` && string(*a11) == `{"tenant":"a","amount":1,"priority":7}`
	}, 15*time.Second, 10*time.Millisecond)
}

// chainOf builds n versions of a contract, 1.0.0 to 1.<n-1>.0, each
// deriving compatibly from the one before (the same messages: only the
// version changes, and so the fingerprint).
func chainOf(t *testing.T, n int) []*framework.Contract {
	t.Helper()
	var out []*framework.Contract
	for i := 0; i < n; i++ {
		m := grantsModel(fmt.Sprintf("1.%d.0", i), grantV10Schema, resultV10Schema, false)
		m.Topics = nil
		if i == 0 {
			out = append(out, framework.MustContract(m))
			continue
		}
		c, err := framework.NewCompatibleContract(m, framework.Compatible{Contract: out[i-1], Methods: map[string]framework.CompatibleMethod{
			"Request": framework.ConvertCompatibleMethod(convertJSON[GrantV10, GrantV10], convertJSON[GrantV10, GrantV10],
				convertJSON[ResultV10, ResultV10], convertJSON[ResultV10, ResultV10]),
			"RequestMany": framework.ConvertCompatibleMethod(convertJSON[GrantV10, GrantV10], convertJSON[GrantV10, GrantV10],
				convertJSON[ResultV10, ResultV10], convertJSON[ResultV10, ResultV10]),
		}})
		require.NoError(t, err)
		out = append(out, c)
	}
	return out
}

// TestCompatibleChainIsBounded checks that a contract speaks at most
// MaxCompatibleVersions earlier versions: a client of 1.6.0 calls a 1.2.0
// server, and is refused by a 1.1.0 one.
func TestCompatibleChainIsBounded(t *testing.T) {
	t.Parallel()
	chain := chainOf(t, 7)
	latest := chain[6]
	require.Len(t, latest.Compatible(), framework.MaxCompatibleVersions)
	assert.Equal(t, []*framework.Contract{chain[5], chain[4], chain[3], chain[2]}, latest.Compatible())

	start := func(c *framework.Contract) *frameworktest.Running {
		return frameworktest.StartServer(t, framework.ServerConfig{Component: "controller", Release: "1.31.0"}, func(s *framework.Server) {
			h := func(context.Context, *GrantV10) (*ResultV10, error) { return &ResultV10{OK: true}, nil }
			framework.HandleUnary(s, c, "Request", h)
			framework.HandleBatch(s, c, "RequestMany", h)
			framework.ServeCompatible(s, c)
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inReach := start(chain[2])
	_, err := framework.CallUnary[GrantV10, ResultV10](ctx, grantsClient(t, latest, inReach.URL), "Request", &GrantV10{Tenant: "a", Amount: 1})
	require.NoError(t, err)
	assert.Equal(t, []string{"1.2.0"}, agreed(inReach))

	beyond := start(chain[1])
	_, err = framework.CallUnary[GrantV10, ResultV10](ctx, grantsClient(t, latest, beyond.URL), "Request", &GrantV10{Tenant: "a", Amount: 1},
		framework.FailFast())
	var state *framework.PeerState
	require.ErrorAs(t, err, &state)
	assert.True(t, state.Refused, "1.1.0 is beyond the chain's bound: refused")
	assert.Contains(t, state.Error(), "version_mismatch")
	assert.Empty(t, agreed(beyond))

	// A server serves its chain within the same bound: 1.6.0 serves 1.2.0
	// clients, not 1.1.0 ones.
	newest := start(latest)
	_, err = framework.CallUnary[GrantV10, ResultV10](ctx, grantsClient(t, chain[2], newest.URL), "Request", &GrantV10{Tenant: "a", Amount: 1})
	require.NoError(t, err)
	_, err = framework.CallUnary[GrantV10, ResultV10](ctx, grantsClient(t, chain[1], newest.URL), "Request", &GrantV10{Tenant: "a", Amount: 1},
		framework.FailFast())
	require.ErrorAs(t, err, &state)
	assert.True(t, state.Refused)
}

func TestNewCompatibleContractRefusesMistakes(t *testing.T) {
	t.Parallel()
	identity := framework.ConvertCompatibleMethod(convertJSON[GrantV10, GrantV11], convertJSON[GrantV11, GrantV10],
		convertJSON[ResultV10, ResultV11], convertJSON[ResultV11, ResultV10])
	topic := framework.ConvertCompatibleTopic(convertJSON[GrantV10, GrantV11], convertJSON[GrantV11, GrantV10])
	later := grantsModel("1.1.0", grantV11Schema, resultV11Schema, true)
	tests := []struct {
		name string
		// from is the earlier version with its conversions.
		from framework.Compatible
		// says is a part of the error.
		says string
	}{
		{"no contract", framework.Compatible{}, "no contract"},
		{"a method without a conversion", framework.Compatible{Contract: grantsV10,
			Methods: map[string]framework.CompatibleMethod{"Request": identity},
			Topics:  map[string]framework.CompatibleTopic{"Grants": topic}}, "no conversion for method RequestMany"},
		{"a topic without a conversion", framework.Compatible{Contract: grantsV10,
			Methods: map[string]framework.CompatibleMethod{"Request": identity, "RequestMany": identity}}, "no conversion for topic Grants"},
		{"a method the earlier version lacks", framework.Compatible{Contract: grantsV10,
			Methods: map[string]framework.CompatibleMethod{"Request": identity, "RequestMany": identity, "Revoke": identity},
			Topics:  map[string]framework.CompatibleTopic{"Grants": topic}}, "converting method Revoke"},
		{"a later version", framework.Compatible{Contract: grantsV12}, "not earlier"},
	}
	for _, test := range tests {
		_, err := framework.NewCompatibleContract(later, test.from)
		if assert.Error(t, err, test.name) {
			assert.Contains(t, err.Error(), test.says, test.name)
		}
	}
	m := grantsModel("1.0.0", grantV10Schema, resultV10Schema, false)
	m.Topics["Leases"] = handshake.Topic{Object: "Grant", Key: "tenant", Writer: handshake.RoleClient, LostWriter: handshake.LostWriterDelete}
	withClientTopic := framework.MustContract(m)
	_, err := framework.NewCompatibleContract(later, framework.Compatible{Contract: withClientTopic,
		Methods: map[string]framework.CompatibleMethod{"Request": identity, "RequestMany": identity},
		Topics:  map[string]framework.CompatibleTopic{"Grants": topic}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "topic Leases is written by clients")
}

// TestCompatibleWatcherOfEarlierServer watches a 1.0.0 server's topic
// from 1.1.0 and 1.2.0 clients, with no fork configured: each converts the
// objects up, the 1.2.0 one through 1.1.0, and sees the members 1.0.0
// lacks absent.
func TestCompatibleWatcherOfEarlierServer(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var grants *framework.TopicWriter[GrantV10]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "controller", Release: "1.31.0"}, func(s *framework.Server) {
		h := func(context.Context, *GrantV10) (*ResultV10, error) { return &ResultV10{OK: true}, nil }
		framework.HandleUnary(s, grantsV10, "Request", h)
		framework.HandleBatch(s, grantsV10, "RequestMany", h)
		grants = framework.ServeTopic[GrantV10](s, grantsV10, "Grants")
	})
	v11, err := framework.Watch[GrantV11](ctx, grantsClient(t, grantsV11, srv.URL), "Grants", framework.InformerHandlers[GrantV11]{})
	require.NoError(t, err)
	t.Cleanup(v11.Stop)
	v12, err := framework.Watch[GrantV12](ctx, grantsClient(t, grantsV12, srv.URL), "Grants", framework.InformerHandlers[GrantV12]{})
	require.NoError(t, err)
	t.Cleanup(v12.Stop)

	require.NoError(t, grants.Set(&GrantV10{Tenant: "a", Amount: 1}))
	require.NoError(t, grants.Set(&GrantV10{Tenant: "b", Amount: 2}))
	require.NoError(t, grants.Delete("a"))
	require.Eventually(t, func() bool {
		b11, ok11 := v11.Get("b")
		b12, ok12 := v12.Get("b")
		return ok11 && ok12 && v11.Len() == 1 && v12.Len() == 1 && b11.Amount == 2 && b11.Priority == nil &&
			b12.Amount == 2 && b12.Zone == nil
	}, 15*time.Second, 10*time.Millisecond)
	assert.Equal(t, []string{"1.0.0", "1.0.0"}, agreed(srv))
}
