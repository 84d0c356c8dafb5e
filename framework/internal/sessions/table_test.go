package sessions

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
)

// rec is a session record as the table reads it.
type rec struct {
	token, contract, instance, owner string
	usage                            *limits.Usage
	lastSeen                         int64
}

func (r *rec) Token() string        { return r.token }
func (r *rec) Key() Key             { return Key{r.contract, r.instance} }
func (r *rec) Owner() string        { return r.owner }
func (r *rec) Usage() *limits.Usage { return r.usage }
func (r *rec) LastSeen() int64      { return r.lastSeen }

func newTable() *Table[*rec, string] {
	l := limits.NewPeers(limits.Config{SessionsPerPeer: 2}, 8, func(limits.Name) {})
	return New[*rec](l, func(held, claimed string) bool { return held == claimed })
}

func TestAnInstancesSessionIsReplacedByItsOwnerOnly(t *testing.T) {
	tab := newTable()
	kubelet, intruder := &limits.Usage{}, &limits.Usage{}
	first := &rec{token: "t1", contract: "nodestatus", instance: "node-1", owner: "kubelet/node-1", usage: kubelet}
	replaced, err := tab.Put(first)
	require.NoError(t, err)
	assert.Nil(t, replaced)

	_, err = tab.Put(&rec{token: "t2", contract: "nodestatus", instance: "node-1", owner: "kubelet/node-2", usage: intruder})
	assert.Equal(t, apierror.CodePermissionDenied, apierror.CodeOf(err), "another identity takes no instance over")
	assert.Equal(t, apierror.CodePermissionDenied, apierror.CodeOf(tab.Check(intruder, "kubelet/node-2", first.Key())))
	assert.Same(t, first, tab.Get("t1"), "the holder keeps its session")

	second := &rec{token: "t3", contract: "nodestatus", instance: "node-1", owner: "kubelet/node-1", usage: kubelet}
	replaced, err = tab.Put(second)
	require.NoError(t, err)
	assert.Same(t, first, replaced)
	assert.Nil(t, tab.Get("t1"))
	assert.Same(t, second, tab.Of(first.Key()))
	assert.Equal(t, 1, tab.Len())
	assert.False(t, tab.Remove(first), "a replaced session is no longer current")
	assert.True(t, tab.Remove(second))
	assert.False(t, tab.Has(first.Key()))
}

func TestAPeersSessionsAreCountedInItsShare(t *testing.T) {
	tab := newTable()
	u := &limits.Usage{}
	for i, inst := range []string{"a", "b"} {
		_, err := tab.Put(&rec{token: inst, contract: "c", instance: inst, owner: "p", usage: u, lastSeen: int64(i) * int64(time.Second)})
		require.NoError(t, err)
	}
	_, err := tab.Put(&rec{token: "c", contract: "c", instance: "c", owner: "p", usage: u})
	assert.Equal(t, apierror.CodeResourceExhausted, apierror.CodeOf(err), "a third session is over the peer's share of 2")
	assert.NoError(t, tab.Check(u, "p", Key{"c", "a"}), "replacing one of its own costs nothing")
	assert.Equal(t, 2, tab.CountFor("c"))
	assert.Equal(t, 0, tab.CountFor("other"))
	expired := tab.Expired(int64(2*time.Second), 1500*time.Millisecond)
	require.Len(t, expired, 1)
	assert.Equal(t, "a", expired[0].token, "only the session idle past the TTL")
	assert.Len(t, tab.Snapshot(), 2)
}
