package clienthttp

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckEndpointURL(t *testing.T) {
	for raw, insecure := range map[string]bool{"http://127.0.0.1:8080": false, "http://localhost:1": false, "https://example.com": false, "http://[::1]:1": false, "http://example.com": true} {
		_, err := CheckEndpointURL(raw, insecure)
		assert.NoError(t, err, raw)
	}
	for _, raw := range []string{"ftp://127.0.0.1", "http://", "http://example.com", "::"} {
		_, err := CheckEndpointURL(raw, false)
		assert.Error(t, err, raw)
	}
}

func TestIsDialErrorOnlyForRequestsThatNeverLeft(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	_, err = http.Get("http://" + addr) // nothing listens there now
	require.Error(t, err)
	assert.True(t, IsDialError(err))
	assert.False(t, IsDialError(context.Canceled))
}

func TestSentKnowsARequestThatLeft(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	var sent Sent
	assert.False(t, sent.NotSent(), "no connection reported: nothing proven")
	req, err := http.NewRequestWithContext(sent.Trace(context.Background()), http.MethodPost, srv.URL, nil)
	require.NoError(t, err)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.False(t, sent.NotSent(), "the head was written")
	assert.True(t, sent.gotConn.Load())
}

// A body in parts reaches the server whole, with its length declared (not
// chunked), and GetBody gives it again from its start.
func TestSetBodyPartsSendsTheWholeBodyWithItsLength(t *testing.T) {
	type seen struct {
		body     string
		length   int64
		encoding []string
	}
	got := make(chan seen, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{string(b), r.ContentLength, r.TransferEncoding}
	}))
	defer srv.Close()
	parts := net.Buffers{[]byte(`{"calls":[{"request":`), []byte(`{"a":1}`), []byte(`}]}`)}
	const want = `{"calls":[{"request":{"a":1}}]}`
	for range 2 { // the same parts serve two requests
		req, err := http.NewRequest(http.MethodPost, srv.URL, http.NoBody)
		require.NoError(t, err)
		SetBodyParts(req, parts, len(want))
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, seen{want, int64(len(want)), nil}, <-got)
		again, err := req.GetBody()
		require.NoError(t, err)
		b, err := io.ReadAll(again)
		require.NoError(t, err)
		assert.Equal(t, want, string(b))
	}
}
