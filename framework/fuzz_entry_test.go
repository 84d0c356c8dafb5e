package framework_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
	"github.com/lockstep-dev/lockstep/framework/protocol"
	"github.com/lockstep-dev/lockstep/handshake"
)

// entryFuzzServer is a server holding the bench contract's methods and the
// topics contract's client-written topics, served through ServeHTTP (no
// listener: a fuzz input costs one in-process request), with a session of
// each contract to put in requests.
type entryFuzzServer struct {
	srv                     *framework.Server
	bench, topics           *framework.Contract
	benchToken, topicsToken string
}

func newEntryFuzzServer(f *testing.F) *entryFuzzServer {
	f.Helper()
	bench, err := framework.NewContract(benchmsg.Contract("1.0.0"))
	if err != nil {
		f.Fatal(err)
	}
	topics, err := framework.NewContract(topicmsg.Contract("1.0.0"))
	if err != nil {
		f.Fatal(err)
	}
	srv, err := framework.NewServer(framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0",
		MaxBodyBytes: 64 << 10, Logger: frameworktest.Quiet()})
	if err != nil {
		f.Fatal(err)
	}
	ack := func(context.Context, *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
		return &benchmsg.Ack{Accepted: true}, nil
	}
	framework.HandleUnary(srv, bench, "ReportStatus", ack)
	framework.HandleBatch(srv, bench, "ReportStatuses", ack)
	framework.ServeTopic[topicmsg.NodeHealth](srv, topics, topicmsg.TopicNodeHealth)
	framework.ServeClientTopic[topicmsg.Lease](srv, topics, topicmsg.TopicLease)
	framework.ServeClientTopic[topicmsg.Capacity](srv, topics, topicmsg.TopicCapacity)
	framework.ServeOtherTopics(srv, topics)
	if err := srv.Start(); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = srv.Close() })
	s := &entryFuzzServer{srv: srv, bench: bench, topics: topics}
	s.benchToken = s.handshake(f, bench, "fuzz-bench")
	s.topicsToken = s.handshake(f, topics, "fuzz-topics")
	return s
}

func (s *entryFuzzServer) handshake(f *testing.F, c *framework.Contract, instance string) string {
	f.Helper()
	body, _ := json.Marshal(handshake.Hello{Contract: c.Name(), Component: c.Client(), Instance: instance,
		Release: "1.31.0", Offers: []handshake.Offer{c.Offer()}})
	rec := s.serve(http.MethodPost, protocol.PathHandshake, "", body)
	if rec.Code != http.StatusOK {
		f.Fatalf("handshake: %d %s", rec.Code, rec.Body)
	}
	var w handshake.Welcome
	if err := json.Unmarshal(rec.Body.Bytes(), &w); err != nil {
		f.Fatal(err)
	}
	return w.Session
}

func (s *entryFuzzServer) serve(method, path, token string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set(protocol.HeaderSession, token)
	}
	rec := httptest.NewRecorder()
	s.srv.ServeHTTP(rec, req)
	return rec
}

// checkAnswer asserts what every answer to an untrusted body must be: no
// server error, an error body in the one error shape with a known code
// whose status it travels under, and no "not processed" mark on a body the
// server refused as invalid (a client would resend it).
func checkAnswer(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	if rec.Code >= 500 {
		t.Fatalf("status %d for an untrusted body: %s", rec.Code, rec.Body)
	}
	if rec.Code < 300 {
		if !json.Valid(rec.Body.Bytes()) && rec.Code != http.StatusNoContent {
			t.Fatalf("status %d with a body that is not JSON: %q", rec.Code, rec.Body)
		}
		return
	}
	var w struct {
		Code framework.Code `json:"code"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &w); err != nil || !w.Code.Valid() || w.Code.HTTPStatus() != rec.Code {
		t.Fatalf("status %d with body %q: not the error shape", rec.Code, rec.Body)
	}
	if w.Code == framework.CodeInvalidArgument && rec.Header().Get(protocol.HeaderNotProcessed) != "" {
		t.Fatalf("invalid_argument marked %s: %s", protocol.HeaderNotProcessed, rec.Body)
	}
}

// FuzzHandshakeEntry sends arbitrary hellos to POST /lockstep/handshake.
func FuzzHandshakeEntry(f *testing.F) {
	s := newEntryFuzzServer(f)
	good, _ := json.Marshal(handshake.Hello{Contract: "bench", Component: "kubelet", Instance: "seed",
		Release: "1.31.0", Offers: []handshake.Offer{s.bench.Offer()}})
	f.Add(good)
	f.Add(append(bytes.TrimSuffix(good, []byte("}")), []byte(`,"Component":"scheduler"}`)...))
	f.Add([]byte("{\"contract\":\"bench\",\"instance\":\"\xff\"}"))
	f.Add([]byte(`{"offers":[{"version":"1.0.0","fingerprint":"lsfp1:00"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, s.serve(http.MethodPost, protocol.PathHandshake, "", body))
	})
}

// FuzzMultiCallEntry sends arbitrary multi-call envelopes and batch bodies.
func FuzzMultiCallEntry(f *testing.F) {
	s := newEntryFuzzServer(f)
	node, _ := json.Marshal(benchmsg.Node(1))
	f.Add([]byte(`{"calls":[{"method":"ReportStatus","request":`+string(node)+`}]}`), false)
	f.Add([]byte(`{"calls":[{"method":"ReportStatus","request":{},"timeout":"1x","header":{"a":"b"}}]}`), false)
	f.Add([]byte(`{"items":[`+string(node)+`,{}]}`), true)
	f.Add([]byte(`{"items":null}`), true)
	multi := protocol.MultiCallMethod
	f.Fuzz(func(t *testing.T, body []byte, batch bool) {
		method := multi
		if batch {
			method = "ReportStatuses"
		}
		checkAnswer(t, s.serve(http.MethodPost, "/lockstep/bench/1.0.0/"+method, s.benchToken, body))
	})
}

// FuzzTopicWriteEntry sends arbitrary topic writes.
func FuzzTopicWriteEntry(f *testing.F) {
	s := newEntryFuzzServer(f)
	f.Add([]byte(`{"epoch":"e1","seq":1,"set":{"node":"n1","renewals":1}}`))
	f.Add([]byte(`{"epoch":"e1","seq":2,"delete":"n1"}`))
	f.Add([]byte(`{"epoch":"","seq":-1}`))
	path := protocol.TopicPath("topics", "1.0.0", topicmsg.TopicLease)
	f.Fuzz(func(t *testing.T, body []byte) {
		checkAnswer(t, s.serve(http.MethodPost, path, s.topicsToken, body))
	})
}

// FuzzHeartbeatEntry sends arbitrary heartbeat and session-close bodies.
func FuzzHeartbeatEntry(f *testing.F) {
	s := newEntryFuzzServer(f)
	f.Add([]byte(`{"sessions":["`+s.benchToken+`","nope"]}`), false)
	f.Add([]byte(`{"sessions":"x"}`), false)
	f.Add([]byte(`{"sessions":["nope"]}`), true)
	f.Fuzz(func(t *testing.T, body []byte, closeSessions bool) {
		if closeSessions {
			// Never the fuzz server's own sessions: they must survive.
			if bytes.Contains(body, []byte(s.benchToken)) || bytes.Contains(body, []byte(s.topicsToken)) {
				return
			}
			checkAnswer(t, s.serve(http.MethodDelete, protocol.PathSession, "", body))
			return
		}
		checkAnswer(t, s.serve(http.MethodPost, protocol.PathHeartbeat, "", body))
	})
}
