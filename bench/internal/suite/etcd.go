package suite

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"

	"github.com/lockstep-dev/lockstep/bench/internal/scratch"
)

// etcdServer is an embedded, single-member etcd with its data in a
// temporary folder removed when it stops (or when the run is interrupted:
// package scratch). Its writes are durable: the WAL
// is fsynced, as etcd runs by default.
type etcdServer struct {
	e   *embed.Etcd
	dir string
	url string
}

func startEtcd() (*etcdServer, error) {
	dir, err := scratch.Dir("etcd")
	if err != nil {
		return nil, err
	}
	clientAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	peerAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "bench"
	cfg.Dir = dir
	// Quiet: its shutdown logs errors for the listeners it closes itself.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	curl := url.URL{Scheme: "http", Host: clientAddr}
	purl := url.URL{Scheme: "http", Host: peerAddr}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{curl}, []url.URL{curl}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{purl}, []url.URL{purl}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		_ = scratch.Remove(dir)
		return nil, err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		_ = scratch.Remove(dir)
		return nil, errors.New("embedded etcd did not become ready within 30s")
	}
	return &etcdServer{e: e, dir: dir, url: curl.String()}, nil
}

// client returns a new etcd client (one gRPC connection).
func (s *etcdServer) client() (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{Endpoints: []string{s.url}, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
}

func (s *etcdServer) stop() error {
	s.e.Close()
	select {
	case <-s.e.Server.StopNotify():
	case <-time.After(10 * time.Second):
		return fmt.Errorf("embedded etcd did not stop within 10s")
	}
	return scratch.Remove(s.dir)
}
