package framework_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/handshake"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// The Kubernetes scheduler extender's JSON has no tags: peers send Go field
// names. A message marked case-insensitive accepts any spelling and is
// validated in its canonical one.
type FilterArgs struct {
	NodeNames []string `json:"nodenames"`
}

type FilterResult struct {
	NodeNames   []string          `json:"nodenames"`
	FailedNodes map[string]string `json:"failedNodes,omitempty"`
}

var extenderContract = framework.MustContract(handshake.Contract{
	Name: "extender", Version: "1.0.0", Server: "extender", Client: "scheduler",
	Methods: map[string]handshake.Method{"Filter": {Request: "FilterArgs", Response: "FilterResult", Path: "filter"}},
	Schemas: map[string]json.RawMessage{
		"FilterArgs": json.RawMessage(`{"x-lockstep-case-insensitive":true,"type":"object","additionalProperties":false,
			"required":["nodenames"],"properties":{"nodenames":{"type":"array","items":{"type":"string"}}}}`),
		"FilterResult": json.RawMessage(`{"x-lockstep-case-insensitive":true,"type":"object","additionalProperties":false,
			"required":["nodenames"],"properties":{"nodenames":{"type":"array","items":{"type":"string"}},
			"failedNodes":{"type":"object","additionalProperties":{"type":"string"}}}}`),
	},
})

func TestCaseInsensitiveMessagesAcceptGoFieldNames(t *testing.T) {
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "extender", Release: "1.0.0"}, func(s *framework.Server) {
		framework.HandleUnary(s, extenderContract, "Filter", func(_ context.Context, a *FilterArgs) (*FilterResult, error) {
			return &FilterResult{NodeNames: a.NodeNames[:1]}, nil
		})
	})
	b, _ := json.Marshal(handshake.Hello{Contract: "extender", Component: "scheduler", Instance: "s1", Release: "1.0.0",
		Offers: []handshake.Offer{extenderContract.Offer()}})
	a := do(t, http.MethodPost, srv.URL+protocol.PathHandshake, nil, b)
	require.Equal(t, http.StatusOK, a.status)
	var w handshake.Welcome
	require.NoError(t, json.Unmarshal(a.body, &w))
	t.Cleanup(func() { closeRawSession(srv.URL, w.Session) }) // see rawHandshake
	a = do(t, http.MethodPost, srv.URL+protocol.CallPath("extender", "1.0.0", "Filter"),
		map[string]string{protocol.HeaderSession: w.Session}, []byte(`{"NodeNames":["n1","n2"]}`))
	require.Equal(t, http.StatusOK, a.status, string(a.body))
	assert.JSONEq(t, `{"nodenames":["n1"]}`, string(a.body))
	// Still validated: a wrong type in any spelling is refused.
	a = do(t, http.MethodPost, srv.URL+protocol.CallPath("extender", "1.0.0", "Filter"),
		map[string]string{protocol.HeaderSession: w.Session}, []byte(`{"NODENAMES":"n1"}`))
	assert.Equal(t, "invalid_argument", a.code)

	// A pinned extender answering with Go field names.
	ext := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"NodeNames":["n2"],"FailedNodes":{"n1":"no GPU"}}`))
	}))
	t.Cleanup(ext.Close)
	cl := frameworktest.NewClient(t, extenderContract, framework.ClientConfig{Component: "scheduler", Release: "1.0.0",
		Pinned: []framework.PinnedPeer{{URL: ext.URL, Version: "1.0.0"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res, err := framework.CallUnary[FilterArgs, FilterResult](ctx, cl, "Filter", &FilterArgs{NodeNames: []string{"n1", "n2"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"n2"}, res.NodeNames)
	assert.Equal(t, map[string]string{"n1": "no GPU"}, res.FailedNodes)
}
