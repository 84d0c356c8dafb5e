package demo

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(`# HELP lockstep_calls_total Finished calls.
# TYPE lockstep_calls_total counter
lockstep_calls_total{code="ok",contract="nodestatus",method="ReportStatus",side="client",version="2.0.0"} 12
lockstep_calls_total{code="unavailable",contract="nodestatus",method="ReportStatus",side="client",version="2.0.0"} 2
lockstep_calls_total{code="ok",contract="nodehealth",method="CheckNode",side="client",version="1.0.0"} 5
sample_extender_requests_total{method="Filter",note="a, \"quoted\" value",outcome="ok"} 3 1700000000000
go_goroutines 17
`))
	require.NoError(t, err)
	assert.Equal(t, 19.0, m.Sum("lockstep_calls_total", nil))
	assert.Equal(t, 14.0, m.Sum("lockstep_calls_total", map[string]string{"contract": "nodestatus"}))
	assert.Equal(t, 2.0, m.Sum("lockstep_calls_total", map[string]string{"contract": "nodestatus", "code": "!ok"}))
	assert.Equal(t, 3.0, m.Sum("sample_extender_requests_total", map[string]string{"note": `a, "quoted" value`}))
	assert.Equal(t, 17.0, m.Sum("go_goroutines", nil))

	_, err = ParseMetrics(strings.NewReader("broken{a=\"1\" 3\n"))
	assert.Error(t, err)
}
