package probe

import (
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"syscall"
)

// watchedConn is a client connection that tells a table when its peer
// closes it.
type watchedConn struct {
	net.Conn
	addr     string
	table    *Table
	reported atomic.Bool
}

func (c *watchedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil && PeerClosedErr(err) && !c.reported.Swap(true) {
		c.table.PeerClosed(c.addr)
	}
	return n, err
}

// PeerClosedErr reports whether a read error means the peer closed the
// connection (not that this side closed it or a deadline passed).
func PeerClosedErr(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)
}

// WatchedDial wraps a dial function so that its connections report their
// peer's close to table. The client's default transport dials through it,
// plain and under TLS (a TLS client puts TLS over it).
func WatchedDial(table *Table, dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &watchedConn{Conn: c, addr: addr, table: table}, nil
	}
}
