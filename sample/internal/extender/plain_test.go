package extender_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/sample/internal/extender"
)

// A pod as a kube-scheduler sends it: a whole core/v1 Pod.
const pod = `{"metadata":{"name":"web-1","namespace":"shop","uid":"u-1","labels":{"app":"web"}},
	"spec":{"containers":[{"name":"app","image":"nginx","resources":{"requests":{"cpu":"250m","memory":"64Mi"}}}]},
	"status":{"phase":"Pending"}}`

// nodes is a NodeList as a kube-scheduler sends it when the extender does
// not cache nodes (nodeCacheCapable: false).
const nodes = `{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[
	{"metadata":{"name":"node-001","labels":{"zone":"a"}},"status":{"capacity":{"cpu":"4"}}},
	{"metadata":{"name":"node-002"},"spec":{"unschedulable":true}},
	{"metadata":{"name":"node-003"}}]}`

func plainExtender(t *testing.T) *httptest.Server {
	t.Helper()
	e, err := extender.New(extender.Config{API: "v1", Plain: true, PlainPrefix: "/scheduler", Maintenance: []string{"node-003"},
		Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	ls, err := e.Server(framework.ServerConfig{Component: "extender", Release: "1.30.0", Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	require.NoError(t, ls.Start())
	srv := httptest.NewServer(ls)
	t.Cleanup(func() { srv.Close(); _ = ls.Close() })
	return srv
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewBufferString(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// TestKubernetesExtenderJSON posts what a kube-scheduler sends to a plain
// extender's v1 endpoints, in both the NodeNames and the Nodes form, with
// Go field names as Kubernetes writes them and in lower case, and checks
// the answers a kube-scheduler reads.
func TestKubernetesExtenderJSON(t *testing.T) {
	srv := plainExtender(t)
	for _, tc := range []struct {
		name   string // what the request shows
		path   string // under the urlPrefix
		body   string // the request
		status int    // the answer's status
		want   string // the answer, as JSON
	}{
		{"filter by node names", "/filter",
			`{"Pod":` + pod + `,"Nodes":null,"NodeNames":["node-001","node-002","node-003"]}`, 200,
			`{"NodeNames":["node-001","node-002"],"FailedNodes":{"node-003":"Maintenance: node is in a maintenance window"},"FailedAndUnresolvableNodes":{}}`},
		{"filter by node names, lower-case keys", "/filter",
			`{"pod":` + pod + `,"nodenames":["node-001","node-003"]}`, 200,
			`{"NodeNames":["node-001"],"FailedNodes":{"node-003":"Maintenance: node is in a maintenance window"},"FailedAndUnresolvableNodes":{}}`},
		{"filter whole nodes: the answer carries the objects sent", "/filter",
			`{"Pod":` + pod + `,"Nodes":` + nodes + `,"NodeNames":null}`, 200,
			`{"Nodes":{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"node-001","labels":{"zone":"a"}},"status":{"capacity":{"cpu":"4"}}}]},
			  "FailedNodes":{"node-003":"Maintenance: node is in a maintenance window"},
			  "FailedAndUnresolvableNodes":{"node-002":"Unschedulable: node is marked unschedulable"}}`},
		{"filter whole nodes, lower-case keys", "/filter",
			`{"POD":` + pod + `,"nodes":` + nodes + `}`, 200,
			`{"Nodes":{"kind":"NodeList","apiVersion":"v1","metadata":{},"items":[{"metadata":{"name":"node-001","labels":{"zone":"a"}},"status":{"capacity":{"cpu":"4"}}}]},
			  "FailedNodes":{"node-003":"Maintenance: node is in a maintenance window"},
			  "FailedAndUnresolvableNodes":{"node-002":"Unschedulable: node is marked unschedulable"}}`},
		{"prioritize before any binding", "/prioritize",
			`{"Pod":` + pod + `,"NodeNames":["node-001","node-002"]}`, 200,
			`[{"Host":"node-001","Score":10},{"Host":"node-002","Score":10}]`},
		{"bind", "/bind",
			`{"PodName":"web-1","PodNamespace":"shop","PodUID":"u-1","Node":"node-001"}`, 200, `{"Error":""}`},
		{"bind again elsewhere, lower-case keys: refused in Error", "/bind",
			`{"podname":"web-1","podnamespace":"shop","poduid":"u-1","node":"node-002"}`, 200,
			`{"Error":"pod shop/web-1 is already bound to node-001"}`},
		{"prioritize spreads away from the bound node", "/prioritize",
			`{"pod":` + pod + `,"nodeNames":["node-001","node-002"]}`, 200,
			`[{"Host":"node-001","Score":5},{"Host":"node-002","Score":10}]`},
		{"a request without its pod", "/filter", `{"NodeNames":["node-001"]}`, 400, ``},
		{"a member of the wrong type, in any case", "/filter", `{"Pod":` + pod + `,"NODENAMES":"node-001"}`, 400, ``},
		{"not JSON", "/bind", `PodName=web-1`, 400, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, srv.URL+"/scheduler"+tc.path, tc.body)
			require.Equal(t, tc.status, status, body)
			if tc.want != "" {
				assert.JSONEq(t, tc.want, body)
			} else {
				var e struct{ Code, Message string }
				require.NoError(t, json.Unmarshal([]byte(body), &e), body)
				assert.Equal(t, "invalid_argument", e.Code)
			}
		})
	}
	status, _ := post(t, srv.URL+"/filter", `{}`)
	assert.Equal(t, http.StatusNotFound, status, "the paths are under the urlPrefix")
}

func TestPlainNeedsV1(t *testing.T) {
	_, err := extender.New(extender.Config{API: "v2", Plain: true, Logger: frameworktest.Quiet()})
	assert.ErrorContains(t, err, "API v1, or v2 in fork mode")
	e, err := extender.New(extender.Config{API: "v2", Fork: true, Plain: true, Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	srv, err := e.Server(framework.ServerConfig{Component: "extender", Release: "1.31.0", Logger: frameworktest.Quiet()})
	require.NoError(t, err)
	assert.NoError(t, srv.Start(), "a plain extender needs no scheduler session to start")
	assert.NoError(t, srv.Close())
	_, err = extender.New(extender.Config{API: "v1", Fork: true})
	assert.ErrorContains(t, err, "fork mode needs API v2")
}
