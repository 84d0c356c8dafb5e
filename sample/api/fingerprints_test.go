package api_test

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockstep-dev/lockstep/framework"
	extenderv1 "github.com/lockstep-dev/lockstep/sample/api/extender/v1"
	extenderv2 "github.com/lockstep-dev/lockstep/sample/api/extender/v2"
	nodehealthv1 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v1"
	nodehealthv2 "github.com/lockstep-dev/lockstep/sample/api/nodehealth/v2"
	nodestatusv1 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v1"
	nodestatusv2 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2"
	nodestatusv21 "github.com/lockstep-dev/lockstep/sample/api/nodestatus/v2_1"
)

// A peer built before a change to a version's messages offers the same
// version with another fingerprint and is refused (fingerprint_mismatch):
// loud, but a change a version bump should have carried. The extender
// contracts changed so twice unnoticed; the ledger makes the next such
// change fail here, with what to do about it.
func TestReleasedVersionsKeepTheirFingerprints(t *testing.T) {
	ledger := readLedger(t, "fingerprints.txt")
	contracts := []*framework.Contract{
		extenderv1.Contract, extenderv2.Contract,
		nodehealthv1.Contract, nodehealthv2.Contract,
		nodestatusv1.Contract, nodestatusv2.Contract, nodestatusv21.Contract,
	}
	for _, c := range contracts {
		id := c.Name() + " " + c.Version()
		want, ok := ledger[id]
		if !assert.True(t, ok, "%s is not in fingerprints.txt: add it once the version is released", id) {
			continue
		}
		assert.Equal(t, want, c.Fingerprint(),
			"%s's messages changed under its version: bump the version (lockstep-gen diff OLD NEW says to which), "+
				"or, for a correction in place on purpose, change fingerprints.txt and say why in docs/design.md", id)
		delete(ledger, id)
	}
	assert.Empty(t, ledger, "fingerprints.txt names contracts the sample does not have")
}

// readLedger reads "contract version fingerprint" lines, skipping
// comments.
func readLedger(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	ledger := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		require.Len(t, fields, 3, "fingerprints.txt: %q", line)
		id := fields[0] + " " + fields[1]
		require.NotContains(t, ledger, id, "fingerprints.txt names %s twice", id)
		ledger[id] = fields[2]
	}
	require.NoError(t, sc.Err())
	return ledger
}
