package framework_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/benchkit/benchmsg"
	"github.com/lockstep-dev/lockstep/framework/certs"
	"github.com/lockstep-dev/lockstep/framework/frameworktest"
	"github.com/lockstep-dev/lockstep/framework/internal/topicmsg"
)

// Attack 2, framework side: a server-written topic that a handler fills
// on its callers' behalf (a node controller publishing the health of each
// node a kubelet reports) was charged to nobody, so one certificate that
// reported thousands of made-up nodes filled it, and the next
// legitimate node was never published. A handler's write with
// TopicWriter.SetFor is charged to the calling peer: one kubelet
// certificate holds its share of the topic's keys, the rest is refused
// resource_exhausted naming the limit and counted, and another kubelet's
// node, and the server's own writes, are still published.
func TestContainServerTopicWritesAreChargedToThePeer(t *testing.T) {
	const keys = 40 // a peer's share 10; the reserve the last 10
	ca := frameworktest.NewCA(t)
	creds, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "nodecontroller", Name: "nc-0"})
	bench, topics := benchContract(t, "1.0.0"), topicContract(t, "1.0.0")
	var health *framework.TopicWriter[topicmsg.NodeHealth]
	srv := frameworktest.StartServer(t, framework.ServerConfig{Component: "nodecontroller", Release: "1.31.0", MTLS: creds},
		func(s *framework.Server) {
			health = framework.ServeTopic[topicmsg.NodeHealth](s, topics, topicmsg.TopicNodeHealth, framework.WithMaxKeys(keys))
			publish := func(ctx context.Context, st *benchmsg.NodeStatus) (*benchmsg.Ack, error) {
				if err := health.SetFor(ctx, &topicmsg.NodeHealth{Node: st.NodeName, Ready: true}); err != nil {
					return nil, err
				}
				return &benchmsg.Ack{Accepted: true}, nil
			}
			framework.HandleUnary(s, bench, "ReportStatus", publish)
			framework.HandleBatch(s, bench, "ReportStatuses", publish)
			framework.ServeOtherTopics(s, topics)
		})
	kubelet := func(name string) *framework.Client {
		c, _ := frameworktest.NewCredentials(t, ca, certs.Spec{Component: "kubelet", Name: name})
		return benchClient(t, "1.0.0", []string{srv.URL}, func(cfg *framework.ClientConfig) { cfg.Transport = c.Transport("") })
	}
	reportNode := func(c *framework.Client, node string) error {
		st := benchmsg.Node(0)
		st.NodeName = node
		_, err := framework.CallUnary[benchmsg.NodeStatus, benchmsg.Ack](timeout(t, 10*time.Second), c, "ReportStatus", st)
		return err
	}
	before := refusals(t, srv.Server, "topic_keys_per_writer")

	evil := kubelet("evil")
	published := 0
	for i := range keys {
		err := reportNode(evil, fmt.Sprintf("made-up-%d", i))
		if err == nil {
			published++
			continue
		}
		require.Equal(t, framework.CodeResourceExhausted, framework.CodeOf(err), "%v", err)
		assert.True(t, strings.Contains(err.Error(), "topic_keys_per_writer"), "the refusal names the limit: %v", err)
	}
	assert.Equal(t, keys/4, published, "one certificate holds its share of the topic")
	assert.Equal(t, float64(keys-keys/4), refusals(t, srv.Server, "topic_keys_per_writer")-before, "each refusal is counted")

	// The server's own writes are its own: they are charged to nobody,
	// and one that sets a key a peer's write held gives the peer's share
	// back, as a delete does.
	require.NoError(t, health.Set(&topicmsg.NodeHealth{Node: "made-up-0", Ready: false}))
	require.NoError(t, reportNode(evil, "made-up-again"), "the key the server took over left room in the share")
	assert.Error(t, reportNode(evil, "made-up-again-2"), "and no more")
	require.NoError(t, health.Delete("made-up-1"))
	require.NoError(t, reportNode(evil, "made-up-again-2"), "a deleted key leaves room too")
	require.Equal(t, keys/4+1, health.Len())

	// Two more certificates fill the topic up to its reserve, which is
	// kept for peers holding little: the legitimate kubelet's node is
	// published, and a fourth certificate takes no more than such a peer
	// may.
	for i := range 2 {
		other := kubelet(fmt.Sprintf("evil-%d", i))
		for j := range keys / 4 {
			_ = reportNode(other, fmt.Sprintf("made-up-%d-%d", i, j))
		}
	}
	require.Equal(t, keys-keys/4, health.Len(), "three certificates and the server hold three quarters")
	require.NoError(t, reportNode(kubelet("good-node"), "good-node"), "the reserve admits a peer holding little")
	_, ok := health.Get("good-node")
	assert.True(t, ok, "the legitimate node is published")
	fourth, took := kubelet("evil-3"), 0
	for j := range keys / 4 {
		err := reportNode(fourth, fmt.Sprintf("made-up-3-%d", j))
		if err == nil {
			took++
			continue
		}
		assert.True(t, strings.Contains(err.Error(), "topic_keys"), "the reserve's refusal names its limit: %v", err)
	}
	assert.LessOrEqual(t, took, keys/4/4, "a fourth certificate takes no more of the reserve than a peer holding little")
	assert.Positive(t, refusals(t, srv.Server, "topic_keys"), "the reserve's refusals are counted")
}
