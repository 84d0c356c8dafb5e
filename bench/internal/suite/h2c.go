package suite

import (
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// h2cPool is a transport lever the unary workload measures: n HTTP/2
// connections without TLS (prior knowledge) to each endpoint, calls spread
// over them round-robin, instead of the default transport's HTTP/1.1
// connection per concurrent call.
type h2cPool struct {
	transports []*http.Transport
	next       atomic.Uint64
}

func newH2CPool(n int) *h2cPool {
	p := &h2cPool{}
	for range n {
		tr := &http.Transport{
			Proxy:           nil,
			DialContext:     (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			IdleConnTimeout: 90 * time.Second,
			Protocols:       new(http.Protocols),
		}
		tr.Protocols.SetUnencryptedHTTP2(true)
		p.transports = append(p.transports, tr)
	}
	return p
}

// RoundTrip sends r over the next connection's transport.
func (p *h2cPool) RoundTrip(r *http.Request) (*http.Response, error) {
	return p.transports[p.next.Add(1)%uint64(len(p.transports))].RoundTrip(r)
}

// CloseIdleConnections closes every connection of the pool.
func (p *h2cPool) CloseIdleConnections() {
	for _, tr := range p.transports {
		tr.CloseIdleConnections()
	}
}
