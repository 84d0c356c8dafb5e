package framework

import (
	"encoding/json"
	"time"

	"github.com/lockstep-dev/lockstep/handshake"
)

// SetWatchWriteTimeout sets how long a server built from c lets a watch
// stream take to accept a write (default 2×SessionTTL), so that a test of
// watchers that never read sees them closed without waiting that long.
func SetWatchWriteTimeout(c *ServerConfig, d time.Duration) { c.watchWriteTimeout = d }

// ServeOtherTopics serves, as raw JSON, every topic c declares that s does
// not serve yet, so that a test about some of a contract's topics can
// start a server ([Server.Start] refuses a declared topic left unserved).
func ServeOtherTopics(s *Server, c *Contract, opts ...TopicOption) {
	var rest []string
	for _, t := range c.Topics() {
		if s.topics.Get(c.Name(), c.Version(), t) == nil {
			rest = append(rest, t)
		}
	}
	for _, t := range rest {
		if decl, _ := c.Topic(t); decl.Writer == handshake.RoleClient {
			ServeClientTopic[json.RawMessage](s, c, t, opts...)
		} else {
			ServeTopic[json.RawMessage](s, c, t, opts...)
		}
	}
}
