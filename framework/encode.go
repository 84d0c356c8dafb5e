package framework

import (
	"encoding/json"
	"sync"

	"github.com/lockstep-dev/lockstep/framework/jsonwire"
)

// encodeBufs holds scratch buffers for marshal, so that a message is
// encoded without growing a fresh slice member by member.
var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// maxPooledBuf bounds the buffers returned to the pool, so that one huge
// message does not pin its buffer for the life of the process.
const maxPooledBuf = 64 << 10

// marshal encodes a message: with its generated encoder ([jsonwire.Appender])
// when it has one, into a pooled scratch buffer, returning a copy of exactly
// the encoded length (the one allocation json.Marshal also makes); otherwise with
// json.Marshal. Requests, answers and topic objects all go through it.
func marshal(v any) ([]byte, error) {
	a, ok := v.(jsonwire.Appender)
	if !ok {
		return json.Marshal(v)
	}
	bp := encodeBufs.Get().(*[]byte)
	b, err := a.AppendJSON((*bp)[:0])
	var out []byte
	if err == nil {
		out = make([]byte, len(b))
		copy(out, b)
	}
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		encodeBufs.Put(bp)
	}
	return out, err
}
