package framework_test

import (
	"crypto/tls"
	"io"
	"net"
	"testing"

	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
)

// BenchmarkMTLSHandshake is the cost of one new mutual TLS connection over
// loopback TCP, client and server in this process (both sides' CPU in one
// op): a full handshake or one resumed from a session ticket, with Go's
// default key exchange (X25519MLKEM768 first) or X25519 alone. The client
// reads the server's first byte, so a ticket sent after the handshake is
// stored before the next connection.
func BenchmarkMTLSHandshake(b *testing.B) {
	ca := frameworktest.NewCA(b)
	server, _ := frameworktest.NewCredentials(b, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	client, _ := frameworktest.NewCredentials(b, ca, certs.Spec{Component: "kubelet", Name: "node-1"})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		tl := tls.NewListener(ln, server.ServerTLS())
		for {
			c, err := tl.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = c.Write([]byte{1})
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	for _, kx := range []struct {
		name   string
		curves []tls.CurveID
	}{{"X25519MLKEM768", nil}, {"X25519", []tls.CurveID{tls.X25519}}} {
		for _, resume := range []bool{false, true} {
			name := kx.name + "/full"
			if resume {
				name = kx.name + "/resumed"
			}
			b.Run(name, func(b *testing.B) {
				cfg := client.ClientTLS()
				cfg.ServerName = "127.0.0.1"
				cfg.CurvePreferences = kx.curves
				if !resume {
					cfg.ClientSessionCache = nil
				} else {
					cfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
				}
				var resumed int
				one := make([]byte, 1)
				cpu0 := processCPU()
				for b.Loop() {
					c, err := tls.Dial("tcp", ln.Addr().String(), cfg)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, one); err != nil {
						b.Fatal(err)
					}
					if c.ConnectionState().DidResume {
						resumed++
					}
					c.Close()
				}
				b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
				if resume && resumed == 0 {
					b.Fatal("no connection resumed")
				}
				if !resume && resumed > 0 {
					b.Fatal("a connection resumed without a session cache")
				}
			})
		}
	}
}
