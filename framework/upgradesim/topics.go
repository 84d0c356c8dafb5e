package upgradesim

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/lockstep-dev/lockstep/framework"
	"github.com/lockstep-dev/lockstep/framework/internal/selvalue"
)

// TopicState returns the objects a replica sees in a topic, by key, each as
// JSON, and whether its view is complete (a watcher that has synced; a
// holder always is). Build one with [InformerState] or [ViewState].
type TopicState func() (objects map[string]string, complete bool)

// InformerState is the [TopicState] of a watcher: what its informer holds,
// complete once it has synced.
func InformerState[T any](i *framework.Informer[T]) TopicState {
	return func() (map[string]string, bool) {
		if !i.HasSynced() {
			return nil, false
		}
		out := map[string]string{}
		for _, k := range i.Keys() {
			if obj, ok := i.Get(k); ok {
				b, _ := json.Marshal(obj)
				out[k] = string(b)
			}
		}
		return out, true
	}
}

// ViewState is the [TopicState] of the replica that holds a topic (pass a
// [framework.TopicWriter]'s TopicView, or [framework.ServeClientTopic]'s
// view).
func ViewState[T any](v *framework.TopicView[T]) TopicState {
	return func() (map[string]string, bool) {
		out := map[string]string{}
		for _, k := range v.Keys() {
			if obj, ok := v.Get(k); ok {
				b, _ := json.Marshal(obj)
				out[k] = string(b)
			}
		}
		return out, true
	}
}

// Selection is what a watcher selects of a topic: selector field → value,
// as it names them to [framework.Select] (a string's text, an integer in
// decimal, true or false). The kit matches a holder's objects against it
// by the rule the server's selection index uses.
type Selection map[string]string

// Watch declares a topic whose watchers must converge: once the plan is
// done and traffic has stopped, every running replica of Watcher whose
// [Instance.Topics] has a complete view of Topic must see exactly what some
// running replica of Holder holds (a watcher of a replicated server sees
// the replica its stream reached), or, for a watcher that declares a
// selection ([Instance.Selections]), exactly the objects of it that
// selection matches. Name a topic once per version form
// ("Nodes@1.0.0") when versions publish different forms; a watcher whose
// form no running holder publishes is not checked. It is checked, and retried until
// [Config.SettleBound], as [InvariantWatchersConverge].
type Watch struct {
	// Topic is the name both sides use in Instance.Topics.
	Topic string
	// Watcher is the watching component, Holder the one holding the topic.
	Watcher, Holder string
}

// InvariantWatchersConverge: every watcher of a declared [Watch] converges
// to its topic's final state.
const InvariantWatchersConverge = "watchers-converge"

// topicState returns replica r's view of a topic, if it runs and has one.
func (c *Cluster) topicState(r *replica, topic string) (map[string]string, bool) {
	inst := c.Instance(r.name)
	if inst == nil || inst.Topics[topic] == nil {
		return nil, false
	}
	return inst.Topics[topic]()
}

// watchersConverged checks every declared watch once.
func (c *Cluster) watchersConverged() error {
	var problems []string
	for _, w := range c.sim.cfg.Watches {
		holders := map[string]map[string]string{}
		for _, h := range c.replicasOf(w.Holder) {
			if objs, ok := c.topicState(h, w.Topic); ok {
				holders[h.name] = objs
			}
		}
		for _, r := range c.replicasOf(w.Watcher) {
			seen, ok := c.topicState(r, w.Topic)
			if !ok {
				continue
			}
			if len(holders) == 0 {
				// No running replica holds the topic in this form: the
				// watcher has no compatible peer to converge to.
				continue
			}
			sel := c.selection(r, w.Topic)
			matched := false
			var diffs []string
			for _, name := range sortedKeys(holders) {
				d := diffObjects(selected(holders[name], sel), seen)
				if d == "" {
					matched = true
					break
				}
				diffs = append(diffs, name+": "+d)
			}
			if !matched {
				view := w.Topic
				if len(sel) > 0 {
					view += " selected by " + sel.String()
				}
				problems = append(problems, fmt.Sprintf("%s's view of %s (%d objects) matches no %s replica: %s",
					r.name, view, len(seen), w.Holder, strings.Join(diffs, "; ")))
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s", strings.Join(problems, "; "))
	}
	return nil
}

// selection returns the selection replica r declares for a topic, if any.
func (c *Cluster) selection(r *replica, topic string) Selection {
	inst := c.Instance(r.name)
	if inst == nil {
		return nil
	}
	return inst.Selections[topic]
}

// selected returns the objects of held that sel matches: all of them for
// no selection.
func selected(held map[string]string, sel Selection) map[string]string {
	if len(sel) == 0 {
		return held
	}
	out := map[string]string{}
	for k, v := range held {
		if selvalue.Matches([]byte(v), sel) {
			out[k] = v
		}
	}
	return out
}

// String spells the selection as a watch's query does: field=value, in
// the fields' order, joined by &.
func (s Selection) String() string {
	parts := make([]string, 0, len(s))
	for _, f := range sortedKeys(s) {
		parts = append(parts, f+"="+s[f])
	}
	return strings.Join(parts, "&")
}

// diffObjects describes how seen differs from held, or "" when it does
// not: the first few keys missing, extra or different.
func diffObjects(held, seen map[string]string) string {
	var diffs []string
	for k, v := range held {
		if s, ok := seen[k]; !ok {
			diffs = append(diffs, "missing "+k)
		} else if s != v {
			diffs = append(diffs, fmt.Sprintf("%s is %s, not %s", k, s, v))
		}
	}
	for k := range seen {
		if _, ok := held[k]; !ok {
			diffs = append(diffs, "extra "+k)
		}
	}
	if len(diffs) == 0 {
		return ""
	}
	sort.Strings(diffs)
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return fmt.Sprintf("holds %d, %s", len(held), strings.Join(diffs, ", "))
}

// watchTarget is what a watch stream streams: a topic of a contract at a
// version.
type watchTarget struct{ contract, version, topic string }

// watchPath returns the target of a watch path
// (/lockstep/<contract>/<version>/watch/<topic>).
func watchPath(path string) (watchTarget, bool) {
	parts := strings.Split(strings.TrimPrefix(path, "/"), "/")
	if len(parts) == 5 && parts[0] == "lockstep" && parts[3] == "watch" {
		return watchTarget{contract: parts[1], version: parts[2], topic: parts[4]}, true
	}
	return watchTarget{}, false
}

// watchServed checks a watch stream a replica answered: both the watcher
// and the replica must speak the version it streams at. The replica's
// incarnation must be the same when the request left and when the answer
// came, or which process answered is not known and nothing is checked.
func (c *Cluster) watchServed(watcher *incarnation, to *replica, sent *incarnation, w watchTarget) {
	contract, version, topic := w.contract, w.version, w.topic
	c.mu.Lock()
	now := to.inc
	c.mu.Unlock()
	if sent == nil || now != sent {
		return
	}
	if slices.Contains(sent.version.Speaks[contract], version) && slices.Contains(watcher.version.Speaks[contract], version) {
		return
	}
	c.violate(InvariantVersions, "watch of %s %s by %s (%s, speaks %s) was served by %s (%s, speaks %s) at %s %s",
		contract, topic, watcher.r.name, watcher.version.Name, speaksText(watcher.version, contract),
		to.name, sent.version.Name, speaksText(sent.version, contract), contract, version)
}
