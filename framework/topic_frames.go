package framework

// The frames of a watch stream (docs/topics.md): built once per change on
// the server and taken apart by the informer, in one place.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// the frames of a watch stream (docs/topics.md), built once per
// change on the server and taken apart by the informer: one place for the
// wire form of topics.

// encodeSetFrame builds a set frame once:
// {"type":"set","key":K,"epoch":E,"seq":N,"object":O}\n. It returns the
// change and the object's bytes inside it.
func encodeSetFrame(key string, ver ObjectVersion, raw []byte) (*topicChange, []byte) {
	qk := quoteJSON(key)
	b := make([]byte, 0, len(raw)+len(qk)+len(ver.Epoch)+64)
	b = append(b, `{"type":"`+protocol.FrameSet+`","key":`...)
	b = append(b, qk...)
	b = append(b, `,"epoch":"`...)
	b = append(b, ver.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, ver.Seq, 10)
	b = append(b, `,"object":`...)
	start := len(b)
	b = append(b, raw...)
	end := len(b)
	b = append(b, "}\n"...)
	return &topicChange{key: key, frame: b}, b[start:end:end]
}

// encodeDeleteFrame builds a delete frame once:
// {"type":"delete","key":K,"epoch":E,"seq":N[,"writerLost":true]}\n.
func encodeDeleteFrame(key string, ver ObjectVersion, writerLost bool) *topicChange {
	qk := quoteJSON(key)
	b := make([]byte, 0, len(qk)+len(ver.Epoch)+80)
	b = append(b, `{"type":"`+protocol.FrameDelete+`","key":`...)
	b = append(b, qk...)
	b = append(b, `,"epoch":"`...)
	b = append(b, ver.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, ver.Seq, 10)
	if writerLost {
		b = append(b, `,"writerLost":true`...)
	}
	b = append(b, "}\n"...)
	return &topicChange{key: key, frame: b}
}

// appendSynced appends the synced marker, which names the server instance
// that holds the topic.
func (t *topicStore) appendSynced(b []byte) []byte {
	b = append(b, `{"type":"`+protocol.FrameSynced+`","instance":`...)
	b = append(b, quoteJSON(t.s.cfg.Instance)...)
	return append(b, "}\n"...)
}

var pingFrame = []byte(`{"type":"` + protocol.FramePing + `"}` + "\n")

// appendClosing appends a closing frame giving reason, one of the
// protocol's Close reasons.
func appendClosing(b []byte, reason string) []byte {
	b = append(b, `{"type":"`+protocol.FrameClosing+`","reason":"`...)
	b = append(b, reason...)
	return append(b, "\"}\n"...)
}

func quoteJSON(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}

// watchFrame is one frame of a watch stream, decoded in one pass with its
// object.
type watchFrame[T any] struct {
	Type       string `json:"type"`
	Key        string `json:"key"`
	Epoch      string `json:"epoch"`
	Seq        uint64 `json:"seq"`
	Object     *T     `json:"object"`
	WriterLost bool   `json:"writerLost"`
	Instance   string `json:"instance"`
	Reason     string `json:"reason"`
}

var deleteFramePrefix = []byte(`{"type":"` + protocol.FrameDelete + `","key":"`)

// frameTypeKey reads a frame's type and key without decoding its object:
// taken apart by hand in the layout this runtime writes, decoded otherwise.
// The key only decides which queued frame a frame replaces; the processor
// decodes each frame in full before using it.
func frameTypeKey(line []byte) (typ, key string, ok bool) {
	for _, p := range []struct {
		prefix []byte
		typ    string
	}{{setFramePrefix, protocol.FrameSet}, {deleteFramePrefix, protocol.FrameDelete}} {
		if rest, found := bytes.CutPrefix(line, p.prefix); found {
			if k, _, plain := cutPlainString(rest); plain {
				return p.typ, string(k), true
			}
		}
	}
	var f struct {
		Type string `json:"type"`
		Key  string `json:"key"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return "", "", false
	}
	return f.Type, f.Key, true
}

var setFramePrefix = []byte(`{"type":"` + protocol.FrameSet + `","key":"`)

// decodeFrame decodes one frame. Set frames in the layout this runtime
// writes ({"type":"set","key":K,"epoch":E,"seq":N,"object":O}, strings
// without escapes) are taken apart by hand, so that only the object goes
// through a JSON decoder; any other frame, or one the fast path cannot
// take, is decoded in full with encoding/json, with the same result.
func decodeFrame[T any](line []byte, f *watchFrame[T]) error {
	if key, epoch, seq, object, ok := splitSetFrame(line); ok {
		obj := new(T)
		if unmarshalObject(object, obj) == nil {
			*f = watchFrame[T]{Type: protocol.FrameSet, Key: string(key), Epoch: string(epoch), Seq: seq, Object: obj}
			return nil
		}
	}
	return json.Unmarshal(line, f)
}

// splitSetFrame takes a set frame in the layout this runtime writes apart.
func splitSetFrame(line []byte) (key, epoch []byte, seq uint64, object []byte, ok bool) {
	rest, ok := bytes.CutPrefix(line, setFramePrefix)
	if !ok {
		return nil, nil, 0, nil, false
	}
	if key, rest, ok = cutPlainString(rest); !ok {
		return nil, nil, 0, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"epoch":"`)); !ok {
		return nil, nil, 0, nil, false
	}
	if epoch, rest, ok = cutPlainString(rest); !ok {
		return nil, nil, 0, nil, false
	}
	if rest, ok = bytes.CutPrefix(rest, []byte(`,"seq":`)); !ok {
		return nil, nil, 0, nil, false
	}
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && rest[0] == '0') {
		return nil, nil, 0, nil, false // not a JSON number the way encoding/json reads one
	}
	seq, err := strconv.ParseUint(string(rest[:n]), 10, 64)
	if err != nil {
		return nil, nil, 0, nil, false
	}
	if object, ok = bytes.CutPrefix(rest[n:], []byte(`,"object":`)); !ok {
		return nil, nil, 0, nil, false
	}
	object = bytes.TrimRight(object, " \t\r\n")
	if object, ok = bytes.CutSuffix(object, []byte("}")); !ok || bytes.Equal(object, []byte("null")) {
		return nil, nil, 0, nil, false
	}
	return key, epoch, seq, object, true
}

// unmarshalObject decodes an object. A type with a decoder of its own
// (generated code) is handed the bytes directly, without encoding/json's
// separate pass to check them.
func unmarshalObject(raw []byte, obj any) error {
	if u, ok := obj.(json.Unmarshaler); ok {
		return u.UnmarshalJSON(raw)
	}
	return json.Unmarshal(raw, obj)
}

// cutPlainString returns the JSON string at the start of b (after its
// opening quote) when it is valid UTF-8 without escapes, so that its bytes
// are its value, and what follows its closing quote.
func cutPlainString(b []byte) (s, rest []byte, ok bool) {
	for i, c := range b {
		switch {
		case c == '"':
			if !utf8.Valid(b[:i]) {
				return nil, nil, false
			}
			return b[:i], b[i+1:], true
		case c == '\\' || c < 0x20:
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// readFrameLine reads one line of at most limit bytes; the slice is valid
// until the next read.
func readFrameLine(br *bufio.Reader, scratch *[]byte, limit int64) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err == nil {
		return line, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, err
	}
	buf := append((*scratch)[:0], line...)
	for {
		line, err = br.ReadSlice('\n')
		buf = append(buf, line...)
		if int64(len(buf)) > limit {
			return nil, Errorf(CodePayloadTooLarge, "watch frame exceeds %d bytes", limit)
		}
		if err == nil {
			*scratch = buf
			return buf, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}
