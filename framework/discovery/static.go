package discovery

import (
	"slices"

	"github.com/lockstep-dev/lockstep/framework"
)

// Static returns a source that reports urls once and never changes them:
// the endpoints of a peer whose addresses are known ahead, or of a test's
// servers. It is [framework.StaticEndpoints] (which ClientConfig.Endpoints
// also builds), offered here so that every kind of source is found in one
// place. The source holds its own copy of urls.
func Static(urls ...string) framework.StaticEndpoints {
	return framework.StaticEndpoints(slices.Clone(urls))
}
