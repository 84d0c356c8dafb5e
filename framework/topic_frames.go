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
	"unsafe"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// the frames of a watch stream (docs/topics.md), built once per
// change on the server and taken apart by the informer: one place for the
// wire form of topics.

// encodeSetFrame builds a set frame once, as the change of revision rev:
// {"type":"set","key":K,"epoch":E,"seq":N,"rev":R,"object":O}\n. It
// returns the change and the object's bytes inside it.
func encodeSetFrame(key string, ver ObjectVersion, rev uint64, raw []byte) (*topicChange, []byte) {
	qk := quoteJSON(key)
	b := make([]byte, 0, len(raw)+len(qk)+len(ver.Epoch)+64)
	b = append(b, `{"type":"`+protocol.FrameSet+`","key":`...)
	b = append(b, qk...)
	b = append(b, `,"epoch":"`...)
	b = append(b, ver.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, ver.Seq, 10)
	b = append(b, `,"rev":`...)
	b = strconv.AppendUint(b, rev, 10)
	b = append(b, `,"object":`...)
	start := len(b)
	b = append(b, raw...)
	end := len(b)
	b = append(b, "}\n"...)
	return &topicChange{key: key, frame: b, gen: rev, version: ver}, b[start:end:end]
}

// encodeDeleteFrame builds a delete frame once, as the change of revision
// rev: {"type":"delete","key":K,"epoch":E,"seq":N,"rev":R[,"writerLost":true]}\n.
func encodeDeleteFrame(key string, ver ObjectVersion, rev uint64, writerLost bool) *topicChange {
	qk := quoteJSON(key)
	b := make([]byte, 0, len(qk)+len(ver.Epoch)+80)
	b = append(b, `{"type":"`+protocol.FrameDelete+`","key":`...)
	b = append(b, qk...)
	b = append(b, `,"epoch":"`...)
	b = append(b, ver.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, ver.Seq, 10)
	b = append(b, `,"rev":`...)
	b = strconv.AppendUint(b, rev, 10)
	if writerLost {
		b = append(b, `,"writerLost":true`...)
	}
	b = append(b, "}\n"...)
	return &topicChange{key: key, frame: b, gen: rev, version: ver}
}

// appendSynced appends the synced marker of a stream that has brought its
// watcher to revision rev, by resuming or not:
// {"type":"synced","instance":I,"history":H,"rev":R,"resumed":B,"writer":W}.
// It names the server instance that holds the topic, the resume point
// (the topic's history and the revision), and whether the topic had a
// live writer at that revision (writer).
func (t *topicStore) appendSynced(b []byte, rev uint64, resumed, writer bool) []byte {
	b = append(b, `{"type":"`+protocol.FrameSynced+`","instance":`...)
	b = append(b, quoteJSON(t.s.cfg.Instance)...)
	b = append(b, `,"history":"`...)
	b = append(b, t.history.id...)
	b = append(b, `","rev":`...)
	b = strconv.AppendUint(b, rev, 10)
	b = strconv.AppendBool(append(b, `,"resumed":`...), resumed)
	b = strconv.AppendBool(append(b, `,"writer":`...), writer)
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
	Rev        uint64 `json:"rev"`
	Object     *T     `json:"object"`
	WriterLost bool   `json:"writerLost"`
	Instance   string `json:"instance"`
	History    string `json:"history"`
	Resumed    bool   `json:"resumed"`
	Writer     *bool  `json:"writer"`
	Reason     string `json:"reason"`
}

var deleteFramePrefix = []byte(`{"type":"` + protocol.FrameDelete + `","key":"`)

// frameTypeKey reads a frame's type, key and revision without decoding its
// object: taken apart by hand in the layout this runtime writes, decoded
// otherwise. The key only decides which queued frame a frame replaces; the
// processor decodes each frame in full before using it.
func frameTypeKey(line []byte) (typ, key string, rev uint64, ok bool) {
	for _, p := range []struct {
		prefix []byte
		typ    string
	}{{setFramePrefix, protocol.FrameSet}, {deleteFramePrefix, protocol.FrameDelete}} {
		if rest, found := bytes.CutPrefix(line, p.prefix); found {
			if k, rest, plain := cutPlainString(rest); plain {
				if _, _, rev, _, ok := cutVersion(rest); ok {
					return p.typ, string(k), rev, true
				}
			}
		}
	}
	var f struct {
		Type string `json:"type"`
		Key  string `json:"key"`
		Rev  uint64 `json:"rev"`
	}
	if err := json.Unmarshal(line, &f); err != nil {
		return "", "", 0, false
	}
	return f.Type, f.Key, f.Rev, true
}

// cutVersion takes apart what follows a frame's key in the layout this
// runtime writes: ,"epoch":E,"seq":N and, from servers with revisions,
// ,"rev":R.
func cutVersion(b []byte) (epoch []byte, seq, rev uint64, rest []byte, ok bool) {
	if b, ok = bytes.CutPrefix(b, []byte(`,"epoch":"`)); !ok {
		return nil, 0, 0, nil, false
	}
	if epoch, b, ok = cutPlainString(b); !ok {
		return nil, 0, 0, nil, false
	}
	if b, ok = bytes.CutPrefix(b, []byte(`,"seq":`)); !ok {
		return nil, 0, 0, nil, false
	}
	if seq, b, ok = cutUint(b); !ok {
		return nil, 0, 0, nil, false
	}
	if r, found := bytes.CutPrefix(b, []byte(`,"rev":`)); found {
		if rev, b, ok = cutUint(r); !ok {
			return nil, 0, 0, nil, false
		}
	}
	return epoch, seq, rev, b, true
}

// cutUint reads the JSON unsigned integer at the start of b, as
// encoding/json reads one.
func cutUint(b []byte) (uint64, []byte, bool) {
	n := 0
	for n < len(b) && b[n] >= '0' && b[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && b[0] == '0') {
		return 0, nil, false
	}
	v, err := strconv.ParseUint(string(b[:n]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return v, b[n:], true
}

var setFramePrefix = []byte(`{"type":"` + protocol.FrameSet + `","key":"`)

// decodeFrame decodes one frame. Set frames in the layout this runtime
// writes ({"type":"set","key":K,"epoch":E,"seq":N,"rev":R,"object":O},
// strings without escapes) are taken apart by hand, so that only the object goes
// through a JSON decoder; any other frame, or one the fast path cannot
// take, is decoded in full with encoding/json, with the same result.
//
// line must never be modified again: on the fast path the frame's key,
// epoch and the object's strings are slices of it, not copies (see
// jsonwire.NewSharedDecoder). The informers' frames are: their feed
// reads each into a buffer of its own (readFrames) and only ever shares
// it, so the frame one write sends costs no copy per informer.
func decodeFrame[T any](line []byte, f *watchFrame[T]) error {
	if key, epoch, seq, rev, object, ok := splitSetFrame(line); ok {
		obj := new(T)
		if unmarshalShared(object, obj) == nil {
			*f = watchFrame[T]{Type: protocol.FrameSet, Key: aliasString(key), Epoch: aliasString(epoch), Seq: seq, Rev: rev, Object: obj}
			return nil
		}
	}
	// Decoded into a frame of its own, so that only this path moves a
	// frame to the heap: f is the caller's, most often on its stack.
	var full watchFrame[T]
	err := json.Unmarshal(line, &full)
	*f = full
	return err
}

// aliasString is b as a string without a copy, for bytes nothing writes
// again.
func aliasString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// unmarshalShared is [unmarshalObject] for raw that is never modified
// again: a generated message type (jsonwire.SharedUnmarshaler, which
// imports this package) decodes it without copying it.
func unmarshalShared(raw []byte, obj any) error {
	if u, ok := obj.(interface{ UnmarshalSharedJSON([]byte) error }); ok {
		return u.UnmarshalSharedJSON(raw)
	}
	return unmarshalObject(raw, obj)
}

// splitSetFrame takes a set frame in the layout this runtime writes apart.
func splitSetFrame(line []byte) (key, epoch []byte, seq, rev uint64, object []byte, ok bool) {
	rest, ok := bytes.CutPrefix(line, setFramePrefix)
	if !ok {
		return nil, nil, 0, 0, nil, false
	}
	if key, rest, ok = cutPlainString(rest); !ok {
		return nil, nil, 0, 0, nil, false
	}
	if epoch, seq, rev, rest, ok = cutVersion(rest); !ok {
		return nil, nil, 0, 0, nil, false
	}
	if object, ok = bytes.CutPrefix(rest, []byte(`,"object":`)); !ok {
		return nil, nil, 0, 0, nil, false
	}
	object = bytes.TrimRight(object, " \t\r\n")
	if object, ok = bytes.CutSuffix(object, []byte("}")); !ok || bytes.Equal(object, []byte("null")) {
		return nil, nil, 0, 0, nil, false
	}
	return key, epoch, seq, rev, object, true
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
