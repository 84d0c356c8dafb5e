package model

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/handshake"
)

// valid is a model Check takes: one method, one topic, their schemas.
func valid() handshake.Contract {
	return handshake.Contract{Name: "grants", Version: "1.0.0", Server: "broker", Client: "agent",
		Methods: map[string]handshake.Method{"Request": {Request: "Grant", Response: "Result"}},
		Topics: map[string]handshake.Topic{"Grants": {Object: "Grant", Key: "tenant", Writer: handshake.RoleServer,
			LostWriter: handshake.LostWriterKeep, Selectors: []string{"zone"}}},
		Schemas: map[string]json.RawMessage{"Grant": json.RawMessage(`{}`), "Result": json.RawMessage(`{}`)},
	}
}

// Check names every mistake of a model, each in its own words.
func TestCheckNamesEachMistake(t *testing.T) {
	m := valid()
	require.NoError(t, Check(&m))
	tests := []struct {
		name string
		// edit makes the mistake in a valid model.
		edit func(m *handshake.Contract)
		// says is a part of the error.
		says string
	}{
		{"no name", func(m *handshake.Contract) { m.Name = "" }, "contract name is required"},
		{"no client", func(m *handshake.Contract) { m.Client = "" }, "server and client components are required"},
		{"one component both sides", func(m *handshake.Contract) { m.Client = m.Server }, `server and client are both "broker"`},
		{"a method name with a dash", func(m *handshake.Contract) {
			m.Methods["Re-quest"] = m.Methods["Request"]
		}, `method "Re-quest": names are letters and digits`},
		{"a method name starting with a digit", func(m *handshake.Contract) {
			m.Methods["1Request"] = m.Methods["Request"]
		}, `method "1Request"`},
		{"a message without a schema", func(m *handshake.Contract) { delete(m.Schemas, "Result") }, `method Request: message "Result" has no schema`},
		{"a topic object without a schema", func(m *handshake.Contract) { delete(m.Schemas, "Grant") }, `topic Grants: object "Grant" has no schema`},
		{"a topic without a writer", func(m *handshake.Contract) { setTopic(m, func(t *handshake.Topic) { t.Writer = "" }) }, "topic Grants: writer must be server or client"},
		{"a topic without a lost-writer policy", func(m *handshake.Contract) { setTopic(m, func(t *handshake.Topic) { t.LostWriter = "" }) }, "topic Grants: lostWriter must be delete or keep"},
		{"a topic without a key", func(m *handshake.Contract) { setTopic(m, func(t *handshake.Topic) { t.Key = "" }) }, "topic Grants: key is required"},
		{"a selector listed twice", func(m *handshake.Contract) {
			setTopic(m, func(t *handshake.Topic) { t.Selectors = []string{"zone", "zone"} })
		}, `topic Grants: selector "zone" is listed twice`},
	}
	for _, test := range tests {
		m := valid()
		test.edit(&m)
		err := Check(&m)
		if assert.Error(t, err, test.name) {
			assert.Contains(t, err.Error(), test.says, test.name)
		}
	}
}

func setTopic(m *handshake.Contract, edit func(*handshake.Topic)) {
	t := m.Topics["Grants"]
	edit(&t)
	m.Topics["Grants"] = t
}

// A selector is a field a watch request may name: not empty, not the
// request's own resume parameter, named once.
func TestCheckSelectors(t *testing.T) {
	assert.NoError(t, CheckSelectors(nil))
	assert.NoError(t, CheckSelectors([]string{"nodeName", "phase"}))
	assert.ErrorContains(t, CheckSelectors([]string{""}), "a selector must name a field")
	assert.ErrorContains(t, CheckSelectors([]string{"since"}), `selector "since" is the watch request's resume parameter`)
	assert.ErrorContains(t, CheckSelectors([]string{"phase", "nodeName", "phase"}), `selector "phase" is listed twice`)
}

// A clone shares no map or selector list with the model it copies.
func TestCloneSharesNothing(t *testing.T) {
	m := valid()
	c := Clone(m)
	require.Equal(t, m, c)
	c.Methods["Other"] = handshake.Method{}
	c.Schemas["Other"] = json.RawMessage(`{}`)
	c.Topics["Grants"].Selectors[0] = "region"
	c.Topics["Other"] = handshake.Topic{}
	assert.Equal(t, valid(), m)
	assert.Nil(t, Clone(handshake.Contract{}).Topics)
}

// The conversions of a compatible version cover every method and topic
// the earlier version declares, and nothing else.
func TestCheckConversions(t *testing.T) {
	old, later := valid(), valid()
	later.Version = "1.1.0"
	later.Methods["Revoke"] = handshake.Method{Request: "Grant", Response: "Result"}
	all := func() (map[string]bool, map[string]bool) {
		return map[string]bool{"Request": true}, map[string]bool{"Grants": true}
	}
	methods, topics := all()
	require.NoError(t, CheckConversions(&old, &later, methods, topics))

	methods, topics = all()
	methods["Request"] = false
	assert.ErrorContains(t, CheckConversions(&old, &later, methods, topics), "1.0.0 with no conversion for method Request (ConvertCompatibleMethod)")
	methods, topics = all()
	delete(topics, "Grants")
	assert.ErrorContains(t, CheckConversions(&old, &later, methods, topics), "1.0.0 with no conversion for topic Grants (ConvertCompatibleTopic)")
	methods, topics = all()
	methods["Revoke"] = true
	assert.ErrorContains(t, CheckConversions(&old, &later, methods, topics), "1.0.0, converting method Revoke, which 1.0.0 does not declare")
	methods, topics = all()
	topics["Leases"] = true
	assert.ErrorContains(t, CheckConversions(&old, &later, methods, topics), "1.0.0, converting topic Leases, which 1.0.0 does not declare")

	methods, topics = all()
	assert.ErrorContains(t, CheckConversions(&later, &old, map[string]bool{"Request": true, "Revoke": true}, topics),
		"1.1.0, whose method Revoke it does not declare")
	lost := valid()
	setTopic(&lost, func(t *handshake.Topic) { t.Writer = handshake.RoleClient })
	assert.ErrorContains(t, CheckConversions(&old, &lost, methods, topics), "whose server-written topic Grants it does not declare as such")
	assert.ErrorContains(t, CheckConversions(&lost, &later, methods, topics), "topic Grants is written by clients")
}
