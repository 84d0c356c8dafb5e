package topics

// Selections of a topic: the fields a contract lets watchers select on
// (handshake.Topic.Selectors), the values a watch request names for them
// (?nodeName=node-042), the values an object holds, and the server's index
// from a selector value to the keys and the watchers that have it, so that
// a change costs work in proportion to the watchers it matches.

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/lockstep-dev/lockstep/framework/internal/apierror"
	"github.com/lockstep-dev/lockstep/framework/internal/limits"
	"github.com/lockstep-dev/lockstep/framework/internal/selvalue"
	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// selTerm is one field of a selection with its value: field is the
// field's place in the topic's selectors.
type selTerm struct {
	field int
	value string
}

// Selection is what a watcher selects: terms sorted by field, every one of
// which an object must match. Empty selects every object.
type Selection []selTerm

// NewSelection checks a selection given by field name against a topic's
// selectors.
func NewSelection(topic string, selectors []string, byName map[string]string) (Selection, error) {
	if len(byName) == 0 {
		return nil, nil
	}
	if len(selectors) == 0 {
		return nil, apierror.Errorf(apierror.CodeInvalidArgument, "topic %s declares no selectors: it cannot be watched by %s", topic, firstName(byName))
	}
	var s Selection
	for field, value := range byName {
		i := slices.Index(selectors, field)
		if i < 0 {
			return nil, apierror.Errorf(apierror.CodeInvalidArgument, "topic %s has no selector %q (its selectors: %s)", topic, field, strings.Join(selectors, ", ")).
				WithDetails(map[string]any{"selector": field, "selectors": selectors})
		}
		if len(value) > MaxSelectorValueBytes {
			return nil, apierror.Errorf(apierror.CodeInvalidArgument, "topic %s: the value of selector %s is %d bytes, at most %d allowed",
				topic, selectors[i], len(value), MaxSelectorValueBytes)
		}
		s = append(s, selTerm{field: i, value: value})
	}
	sort.Slice(s, func(a, b int) bool { return s[a].field < s[b].field })
	return s, nil
}

func firstName(m map[string]string) string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names[0]
}

// MaxSelectorValueBytes bounds a selector value a watch names, as
// MaxKeyBytes bounds a key: a watcher's selection is kept for as long
// as it watches, and shown on the status page, so a value is a resource
// its peer holds. An object field worth selecting on (a node name, a
// phase) is far shorter.
const MaxSelectorValueBytes = 1024

// maxStatusSelection bounds how much of a watcher's selection the status
// shows.
const maxStatusSelection = 256

// statusSelection is a selection as the status shows it: clipped to
// maxStatusSelection bytes (at a rune boundary) with its length said, so
// that a status read costs what the server decides, not what watchers
// named.
func statusSelection(q string) string {
	if len(q) <= maxStatusSelection {
		return q
	}
	cut := maxStatusSelection
	for cut > 0 && !utf8.RuneStart(q[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", q[:cut], len(q))
}

// ParseSelection reads the selection of a watch request of the topic:
// every query parameter but since names a selector and its value. Errors
// are invalid_argument: a parameter the topic has no selector for, one
// given twice, a value over MaxSelectorValueBytes (counted as
// selector_bytes).
func (t *Store) ParseSelection(q url.Values) (Selection, error) {
	topic, selectors := t.name, t.decl.Selectors
	byName := map[string]string{}
	for name, values := range q {
		if name == protocol.QuerySince {
			continue
		}
		if len(values) != 1 {
			return nil, apierror.Errorf(apierror.CodeInvalidArgument, "watch of %s names %s %d times: a selector takes one value", topic, name, len(values))
		}
		if len(values[0]) > MaxSelectorValueBytes {
			t.host.refused(limits.SelectorBytes)
		}
		byName[name] = values[0]
	}
	return NewSelection(topic, selectors, byName)
}

// Query appends the selection as query parameters, in the topic's order of
// selectors.
func (s Selection) Query(selectors []string) url.Values {
	q := url.Values{}
	for _, t := range s {
		q.Set(selectors[t.field], t.value)
	}
	return q
}

// Key is the selection's canonical text, "" when it selects everything:
// it names a shared informer's selection.
func (s Selection) Key(selectors []string) string { return s.Query(selectors).Encode() }

// selValue is an object's value of one selector field: ok is false when
// the object lacks the field or holds null (or a value no selection
// names: an object or an array), so no selection of the field matches.
type selValue struct {
	value string
	ok    bool
}

// selValues are an object's values of every selector field of its topic,
// in the order of the topic's selectors; nil for a deleted key.
type selValues []selValue

// matches reports whether an object with values vs belongs to the
// selection.
func (s Selection) matches(vs selValues) bool {
	if vs == nil {
		return false
	}
	for _, t := range s {
		if v := vs[t.field]; !v.ok || v.value != t.value {
			return false
		}
	}
	return true
}

func (vs selValues) equal(o selValues) bool { return slices.Equal(vs, o) }

// objectSelValues reads the values of the selector fields from an encoded
// object (a JSON object, already checked). A member that is not a string,
// a boolean or a number holds no value.
func objectSelValues(selectors []string, raw []byte) selValues {
	out := make(selValues, len(selectors))
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return out
	}
	for i, f := range selectors {
		if v, ok := fields[f]; ok {
			out[i] = selValueOf(v)
		}
	}
	return out
}

// selValueOf is the text by which a selection names a JSON value
// ([selvalue.Of]).
func selValueOf(v json.RawMessage) selValue {
	value, ok := selvalue.Of(v)
	return selValue{value: value, ok: ok}
}

// selIndex is the server's index of a topic that declares selectors:
// every key by each of its selector values, and every selecting watcher by
// the first term of its selection (a watcher that selects nothing is in
// everyone). A change is then handed to the watchers filed under its
// values, old and new, and to everyone: work in proportion to the watchers
// it may match, not to all watchers. Guarded by the topic's mutex.
type selIndex struct {
	selectors []string
	keys      map[selTerm]map[string]struct{}
	watchers  map[selTerm]map[*Stream]struct{}
	everyone  map[*Stream]struct{}
	// fanPrev holds, for each key with a change waiting in the topic's
	// fan-out, every selection value the key held since it was last
	// handed out (snapshots taken meanwhile may have seen any of them):
	// watchers of those values that the latest change leaves are sent a
	// delete.
	fanPrev map[string][]selValues
}

func newSelIndex(selectors []string) *selIndex {
	if len(selectors) == 0 {
		return nil
	}
	return &selIndex{
		selectors: selectors,
		keys:      map[selTerm]map[string]struct{}{},
		watchers:  map[selTerm]map[*Stream]struct{}{},
		everyone:  map[*Stream]struct{}{},
		fanPrev:   map[string][]selValues{},
	}
}

// fileKey files key under each of its values.
func (x *selIndex) fileKey(key string, vs selValues) {
	for i, v := range vs {
		if !v.ok {
			continue
		}
		t := selTerm{i, v.value}
		keys := x.keys[t]
		if keys == nil {
			keys = map[string]struct{}{}
			x.keys[t] = keys
		}
		keys[key] = struct{}{}
	}
}

// unfileKey takes key out from under each of its values.
func (x *selIndex) unfileKey(key string, vs selValues) {
	for i, v := range vs {
		if !v.ok {
			continue
		}
		t := selTerm{i, v.value}
		if keys := x.keys[t]; keys != nil {
			delete(keys, key)
			if len(keys) == 0 {
				delete(x.keys, t)
			}
		}
	}
}

// selectedKeys returns the keys filed under the selection's first term:
// a superset of the keys it matches.
func (x *selIndex) selectedKeys(s Selection) map[string]struct{} {
	return x.keys[s[0]]
}

func (x *selIndex) addWatcher(ws *Stream) {
	if len(ws.sel) == 0 {
		x.everyone[ws] = struct{}{}
		return
	}
	t := ws.sel[0]
	set := x.watchers[t]
	if set == nil {
		set = map[*Stream]struct{}{}
		x.watchers[t] = set
	}
	set[ws] = struct{}{}
}

func (x *selIndex) removeWatcher(ws *Stream) {
	if len(ws.sel) == 0 {
		delete(x.everyone, ws)
		return
	}
	t := ws.sel[0]
	if set := x.watchers[t]; set != nil {
		delete(set, ws)
		if len(set) == 0 {
			delete(x.watchers, t)
		}
	}
}

// publish records a change of key whose values go from old to ch.sel (nil
// for a delete) for the fan-out, and gives a set that leaves old's
// selection its delete frame, for the watchers it leaves.
func (x *selIndex) publish(ch *change, old selValues) {
	prevs := x.fanPrev[ch.key]
	if old != nil && !slices.ContainsFunc(prevs, old.equal) {
		prevs = append(prevs, old)
	}
	x.fanPrev[ch.key] = prevs
	if ch.sel != nil && ch.leave == nil && slices.ContainsFunc(prevs, func(p selValues) bool { return !p.equal(ch.sel) }) {
		ch.leave = encodeDeleteFrame(ch.key, ch.version, ch.gen, false, ch.header)
	}
}

// delivery is one frame for one watcher.
type delivery struct {
	ws *Stream
	ch *change
}

// route appends, for each change of batch, a delivery to every selecting
// watcher it concerns: the change to those whose selection its object
// matches, its delete frame to those whose selection the key leaves. It
// forgets the values it routed from.
func (x *selIndex) route(batch []*change, out []delivery) []delivery {
	var seen map[*Stream]struct{}
	for _, ch := range batch {
		prevs := x.fanPrev[ch.key]
		delete(x.fanPrev, ch.key)
		if ch.sel != nil {
			for i, v := range ch.sel {
				if !v.ok {
					continue
				}
				for ws := range x.watchers[selTerm{i, v.value}] {
					if ws.sel.matches(ch.sel) {
						out = append(out, delivery{ws, ch})
					}
				}
			}
		}
		leave := ch.leave
		if ch.sel == nil {
			leave = ch // the change is a delete
		}
		if leave == nil {
			continue
		}
		if len(prevs) > 1 {
			if seen == nil {
				seen = map[*Stream]struct{}{}
			}
			clear(seen)
		}
		for _, p := range prevs {
			for i, v := range p {
				if !v.ok {
					continue
				}
				for ws := range x.watchers[selTerm{i, v.value}] {
					if !ws.sel.matches(p) || ws.sel.matches(ch.sel) {
						continue
					}
					if seen != nil {
						if _, dup := seen[ws]; dup {
							continue
						}
						seen[ws] = struct{}{}
					}
					out = append(out, delivery{ws, leave})
				}
			}
		}
	}
	return out
}
