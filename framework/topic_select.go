package framework

// A watch's options: what it selects (the selection's rules and the
// server's index are in framework/internal/topics).

import "github.com/lockstep-dev/lockstep/framework/internal/topics"

// WatchOption configures a watch: an [Informer] made by [Watch], or a
// shared one made by [ForTopic].
type WatchOption interface {
	applyWatch(*watchConfig)
}

type watchConfig struct {
	// selection is the watch's selection, by field name; fields named
	// twice are recorded in dup, and refused.
	selection map[string]string
	dup       []string
	// ownStream gives the informer a stream of its own (ownStream).
	ownStream bool
	// decodeEach makes the informer decode every frame itself
	// ([DecodeEach]).
	decodeEach bool
}

type watchOptionFunc func(*watchConfig)

func (f watchOptionFunc) applyWatch(c *watchConfig) { f(c) }

// Select makes a watch see only the objects whose field holds value, as a
// Kubernetes kubelet watches pods with fieldSelector=spec.nodeName=<node>:
// its snapshot holds only those objects, and an object that stops holding
// value (a pod bound to another node) is a delete for it. field must be one
// of the topic's selectors (the contract's selectors: [...]); a value is a
// string's text, an integer in decimal (42), or true or false. Several
// Select options of distinct fields select the objects that match them
// all. Generated packages offer typed forms (SelectNodeName).
func Select(field, value string) WatchOption {
	return watchOptionFunc(func(c *watchConfig) {
		if c.selection == nil {
			c.selection = map[string]string{}
		}
		if _, dup := c.selection[field]; dup {
			c.dup = append(c.dup, field)
		}
		c.selection[field] = value
	})
}

func newWatchConfig(opts []WatchOption) watchConfig {
	var cfg watchConfig
	for _, o := range opts {
		if o != nil {
			o.applyWatch(&cfg)
		}
	}
	return cfg
}

// selection returns the watch's selection checked against the topic's
// selectors: invalid_argument for a field the topic does not declare, or
// one named twice.
func (cfg watchConfig) checkedSelection(topic string, selectors []string) (topics.Selection, error) {
	if len(cfg.dup) > 0 {
		return nil, Errorf(CodeInvalidArgument, "watch of %s selects on %s twice", topic, cfg.dup[0])
	}
	return topics.NewSelection(topic, selectors, cfg.selection)
}

// MaxSelectorValueBytes bounds a selector value a watch names, as
// [MaxTopicKeyBytes] bounds a key: a watcher's selection is kept for as
// long as it watches, and shown on the status page, so a value is a
// resource its peer holds. An object field worth selecting on (a node
// name, a phase) is far shorter.
const MaxSelectorValueBytes = topics.MaxSelectorValueBytes

// checkSelectors checks a topic's declared selectors (topics.CheckSelectors).
func checkSelectors(sel []string) error { return topics.CheckSelectors(sel) }
