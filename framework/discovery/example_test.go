package discovery_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/discovery"
)

// ExampleDNS follows the A and AAAA records of a headless Service as its
// replicas change. The records are served by a DNS server on 127.0.0.1
// that the example starts; on Kubernetes, leave Servers empty and the
// cluster's DNS is asked, as /etc/resolv.conf says.
func ExampleDNS() {
	clusterDNS, err := newZone("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer clusterDNS.stop()
	clusterDNS.setAddrs("nodecontroller.lockstep.svc.cluster.local", "10.0.0.7", "10.0.0.8", "fd00::7")

	source, err := discovery.NewDNS(discovery.DNSConfig{
		Host:     "nodecontroller.lockstep.svc.cluster.local",
		Port:     8443,
		Servers:  []string{clusterDNS.Addr},
		Interval: 100 * time.Millisecond,
		Logger:   slog.New(slog.DiscardHandler),
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	updates := make(chan []string, 10)
	done := make(chan struct{})
	go func() {
		defer close(done)
		source.Run(ctx, func(urls []string) { updates <- urls })
	}()
	fmt.Println(<-updates)

	// A replica goes away.
	clusterDNS.setAddrs("nodecontroller.lockstep.svc.cluster.local", "10.0.0.8", "fd00::7")
	fmt.Println(<-updates)

	cancel()
	<-done
	// Output:
	// [https://10.0.0.7:8443 https://10.0.0.8:8443 https://[fd00::7]:8443]
	// [https://10.0.0.8:8443 https://[fd00::7]:8443]
}

// ExampleNewDNS configures a client to find every replica of its peer
// through the SRV records of a headless Service whose port is named https,
// as it would on Kubernetes.
func ExampleNewDNS() {
	source, err := discovery.NewDNS(discovery.DNSConfig{
		Service: "_https._tcp.nodecontroller.lockstep.svc.cluster.local",
	})
	if err != nil {
		panic(err)
	}
	client, err := framework.NewClient(framework.MustContract(benchmsg.Contract("1.0.0")), framework.ClientConfig{
		Component: "kubelet",
		Release:   "1.31.0",
		Source:    source,
	})
	if err != nil {
		panic(err)
	}
	defer client.Close()
}

// ExampleStatic gives a client fixed endpoints, from the same package as
// the DNS source. It reports them once.
func ExampleStatic() {
	source := discovery.Static("https://10.0.0.7:8443", "https://10.0.0.8:8443")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	source.Run(ctx, func(urls []string) { fmt.Println(urls) })
	// Output: [https://10.0.0.7:8443 https://10.0.0.8:8443]
}
