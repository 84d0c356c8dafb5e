package suite

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"connectrpc.com/connect"

	"github.com/lockstep-dev/lockstep/bench/benchpb"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
)

// httpServer is a plain net/http server of the anchors that run over
// HTTP/1.1: net/http with encoding/json, and connect-go.
type httpServer struct {
	srv  *http.Server
	base string
	done chan error
}

// startHTTP serves h on 127.0.0.1, plaintext, or TLS with tlsConfig.
func startHTTP(h http.Handler, tlsConfig *tls.Config) (*httpServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	scheme := "http://"
	if tlsConfig != nil {
		l, scheme = tls.NewListener(l, tlsConfig), "https://"
	}
	s := &httpServer{srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second},
		base: scheme + l.Addr().String(), done: make(chan error, 1)}
	if tlsConfig != nil {
		// The run's own check that a peer without a certificate is
		// refused (trust.refusesAnonymous) is expected, not news.
		s.srv.ErrorLog = log.New(io.Discard, "", 0)
	}
	go func() { s.done <- s.srv.Serve(l) }()
	return s, nil
}

func (s *httpServer) stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serveErr := <-s.done; !errors.Is(serveErr, http.ErrServerClosed) {
		err = errors.Join(err, serveErr)
	}
	return err
}

// httpClient keeps enough idle keep-alive connections for 64 callers, as a
// tuned net/http client would.
func httpClient() *http.Client {
	return &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConns: 256, MaxIdleConnsPerHost: 256,
		IdleConnTimeout: 90 * time.Second}}
}

// netHTTPHandler is the net/http + encoding/json anchor: POST /nodestatus
// decodes a NodeStatus and answers an Ack.
func netHTTPHandler() http.Handler {
	var generation atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /nodestatus", func(w http.ResponseWriter, r *http.Request) {
		var n benchmsg.NodeStatus
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<20)).Decode(&n); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(benchmsg.Ack{Accepted: true, Generation: generation.Add(1)})
	})
	return mux
}

// netHTTPCall makes one NodeStatus→Ack call the way a plain net/http
// client does.
func netHTTPCall(ctx context.Context, hc *http.Client, url string, n *benchmsg.NodeStatus) error {
	body, err := json.Marshal(n)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("HTTP %d: %s", resp.StatusCode, msg)
	}
	var ack benchmsg.Ack
	if err := json.NewDecoder(resp.Body).Decode(&ack); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the trailing newline, so the connection is reused
	return checkAck(ack.Accepted, nil)
}

// connectProcedure is the connect-go anchor's procedure.
const connectProcedure = "/lockstep.bench.v1.NodeController/ReportStatus"

// connectHandler serves ReportStatus with connect-go, which answers in the
// codec the client sent: protobuf binary or protojson.
func connectHandler() http.Handler {
	var generation atomic.Int64
	mux := http.NewServeMux()
	mux.Handle(connectProcedure, connect.NewUnaryHandler(connectProcedure,
		func(_ context.Context, _ *connect.Request[benchpb.NodeStatus]) (*connect.Response[benchpb.Ack], error) {
			return connect.NewResponse(&benchpb.Ack{Accepted: true, Generation: generation.Add(1)}), nil
		}))
	return mux
}
