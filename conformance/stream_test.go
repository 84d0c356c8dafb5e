package conformance

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutBody is a watch stream's body that ends in err after its bytes.
type cutBody struct {
	r   io.Reader
	err error
}

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = b.err
	}
	return n, err
}

func (b *cutBody) Close() error { return nil }

// The end step passed on a stream that broke: a server that resets its
// watch streams on a drain, instead of ending them, passed a case that
// asks for their end.
func TestEndStepTellsABrokenStreamFromItsEnd(t *testing.T) {
	frames := `{"type":"ping"}` + "\n"
	for _, c := range []struct {
		name, body string
		err        error
		broken     string
	}{
		{"ended", frames, io.EOF, ""},
		{"cut", frames, io.ErrUnexpectedEOF, "broke instead of ending"},
		{"not JSON", frames + "<html>\n", io.EOF, "not JSON"},
		{"a line without end", frames + strings.Repeat("x", maxFrameBytes+1), io.EOF, "longer than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := &player{streams: map[string]*stream{
				"a": newStream(&cutBody{r: bytes.NewReader([]byte(c.body)), err: c.err}),
			}}
			err := p.end(map[string]any{"stream": "a"})
			if c.broken == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.broken)
		})
	}
}
