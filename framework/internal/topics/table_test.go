package topics

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/handshake"
)

// tableStore is an empty store of a server-written topic, for the table.
func tableStore(contract, version, name string) *Store {
	return NewStore(StoreConfig{Host: &Host{}, Contract: contract, Version: version, Topic: name,
		Decl: handshake.Topic{Key: "k", Writer: handshake.RoleServer}, Config: Config{}.WithDefaults()})
}

// A topic is added once per contract, version and name, and found by
// them; stats come sorted whatever the order topics were added in.
func TestTableAddsEachTopicOnce(t *testing.T) {
	var tb Table
	b := tableStore("grants", "1.1.0", "Grants")
	a := tableStore("grants", "1.0.0", "Grants")
	require.NoError(t, tb.Add(b))
	require.NoError(t, tb.Add(a))
	assert.EqualError(t, tb.Add(tableStore("grants", "1.0.0", "Grants")), "grants 1.0.0 topic Grants registered twice")
	assert.Same(t, a, tb.Get("grants", "1.0.0", "Grants"))
	assert.Nil(t, tb.Get("grants", "1.2.0", "Grants"))
	assert.Equal(t, []*Store{b, a}, tb.All())
	stats := tb.Stats()
	require.Len(t, stats, 2)
	assert.Equal(t, "1.0.0", stats[0].Version)
	assert.Equal(t, "1.1.0", stats[1].Version)
	assert.Empty(t, tb.WriterReports(nil))
	assert.Empty(t, tb.WriterReports(map[string]bool{"leases": true}))
	reports := tb.WriterReports(map[string]bool{"grants": true})
	require.Len(t, reports, 2)
	assert.Equal(t, "1.1.0", reports[0].Version, "in the order added")
	assert.True(t, reports[0].Writer && reports[1].Writer, "a server's writer starts attached")
}

// A fork attaches to its current form's writer whichever is served first,
// once; one still waiting at the end is reported, and a second fork of
// the same topic to the same version is refused.
func TestTableForkWaitsForItsWriter(t *testing.T) {
	var tb Table
	var got []any
	fork := func(old string) *PendingFork {
		return &PendingFork{Contract: "grants", Old: old, Current: "1.2.0", Topic: "Grants", Attach: func(w any) { got = append(got, w) }}
	}
	w, err := tb.AddFork(fork("1.0.0"))
	require.NoError(t, err)
	assert.Nil(t, w, "no writer served yet")
	assert.True(t, tb.Forked("grants", "1.0.0", "Grants"))
	assert.False(t, tb.Forked("grants", "1.2.0", "Grants"))
	_, err = tb.AddFork(fork("1.0.0"))
	assert.EqualError(t, err, "grants 1.0.0 topic Grants forked twice")
	assert.Equal(t, []PendingFork{{Contract: "grants", Old: "1.0.0", Current: "1.2.0", Topic: "Grants"}}, tb.Waiting())

	current := tableStore("grants", "1.2.0", "Grants")
	require.NoError(t, tb.Add(current))
	writer := new(int)
	tb.Served(current, writer)
	assert.Equal(t, []any{writer}, got, "the waiting fork attached")
	assert.Empty(t, tb.Waiting())

	w, err = tb.AddFork(fork("1.1.0"))
	require.NoError(t, err)
	assert.Same(t, writer, w, "a fork added after its writer gets it at once")
	assert.Equal(t, []any{writer}, got, "and attaches it itself")
	tb.Served(current, writer)
	assert.Equal(t, []any{writer}, got, "no fork attaches twice")
}
