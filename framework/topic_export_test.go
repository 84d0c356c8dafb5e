package framework

import "time"

// SetWatchWriteTimeout sets how long a server built from c lets a watch
// stream take to accept a write (default 2×SessionTTL), so that a test of
// watchers that never read sees them closed without waiting that long.
func SetWatchWriteTimeout(c *ServerConfig, d time.Duration) { c.watchWriteTimeout = d }
