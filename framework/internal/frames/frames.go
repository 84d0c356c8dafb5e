// Package frames is the wire form of a watch stream's frames
// (docs/topics.md): the server builds each set or delete frame once per
// change and every watcher is sent the same bytes; the informer takes
// them apart. Both sides import it, so the wire form has one home, apart
// from the topic store that sends frames and the informers that read
// them.
package frames

import (
	"encoding/json"
	"strconv"

	"github.com/lockstep-dev/lockstep/framework/protocol"
)

// ObjectVersion identifies one write of a topic object: the epoch of the
// writer that made it, which changes when the writer restarts, and the
// writer's sequence number, which grows with every write it makes in that
// epoch. There is no version across writers or keys. The framework's
// ObjectVersion is this type: the server stamps it on a change, an
// informer keeps it beside each cached object.
type ObjectVersion struct {
	Epoch string `json:"epoch"`
	Seq   uint64 `json:"seq"`
}

// Change is what a set or delete frame says of its change besides the
// object.
type Change struct {
	// Key is the object's key.
	Key string
	// Epoch and Seq are the object's version: its writer's epoch and the
	// writer's sequence number within it.
	Epoch string
	Seq   uint64
	// Rev is the topic's revision this change made.
	Rev uint64
	// WriterLost marks a delete made because the key's writer was lost
	// (delete frames only).
	WriterLost bool
	// Header, when not nil, is the write's header as a JSON object (its
	// trace context): the frame carries it as "header".
	Header []byte
}

// EncodeSet builds a set frame once:
// {"type":"set","key":K,"epoch":E,"seq":N,"rev":R[,"header":H],"object":O}\n.
// It returns the frame and the object's bytes inside it.
func EncodeSet(c Change, object []byte) (frame, inFrame []byte) {
	qk := Quote(c.Key)
	b := make([]byte, 0, len(object)+len(qk)+len(c.Epoch)+len(c.Header)+76)
	b = appendHead(b, protocol.FrameSet, qk, c)
	b = append(b, `,"object":`...)
	start := len(b)
	b = append(b, object...)
	end := len(b)
	b = append(b, "}\n"...)
	return b, b[start:end:end]
}

// EncodeDelete builds a delete frame once:
// {"type":"delete","key":K,"epoch":E,"seq":N,"rev":R[,"writerLost":true][,"header":H]}\n.
func EncodeDelete(c Change) []byte {
	qk := Quote(c.Key)
	b := make([]byte, 0, len(qk)+len(c.Epoch)+len(c.Header)+92)
	b = appendHead(b, protocol.FrameDelete, qk, c)
	return append(b, "}\n"...)
}

// appendHead appends a set or delete frame up to its object: type, key
// (quoted already), version, revision, writerLost and header.
func appendHead(b []byte, typ string, quotedKey []byte, c Change) []byte {
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","key":`...)
	b = append(b, quotedKey...)
	b = append(b, `,"epoch":"`...)
	b = append(b, c.Epoch...)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, c.Seq, 10)
	b = append(b, `,"rev":`...)
	b = strconv.AppendUint(b, c.Rev, 10)
	if c.WriterLost {
		b = append(b, `,"writerLost":true`...)
	}
	if c.Header != nil {
		b = append(append(b, `,"header":`...), c.Header...)
	}
	return b
}

// Synced is what a synced marker says of a stream: the server instance
// that holds the topic, the resume point (the topic's history and the
// revision the stream brought its watcher to), whether it got there by
// resuming, and whether the topic had a live writer at that revision.
type Synced struct {
	Instance string
	History  string
	Rev      uint64
	Resumed  bool
	Writer   bool
}

// AppendSynced appends the synced marker m:
// {"type":"synced","instance":I,"history":H,"rev":R,"resumed":B,"writer":W}\n.
func AppendSynced(b []byte, m Synced) []byte {
	b = append(b, `{"type":"`+protocol.FrameSynced+`","instance":`...)
	b = append(b, Quote(m.Instance)...)
	b = append(b, `,"history":"`...)
	b = append(b, m.History...)
	b = append(b, `","rev":`...)
	b = strconv.AppendUint(b, m.Rev, 10)
	b = strconv.AppendBool(append(b, `,"resumed":`...), m.Resumed)
	b = strconv.AppendBool(append(b, `,"writer":`...), m.Writer)
	return append(b, "}\n"...)
}

// Ping is the ping frame a server sends on an idle stream; it must not be
// modified.
var Ping = []byte(`{"type":"` + protocol.FramePing + `"}` + "\n")

// AppendClosing appends a closing frame giving reason, one of the
// protocol's Close reasons.
func AppendClosing(b []byte, reason string) []byte {
	b = append(b, `{"type":"`+protocol.FrameClosing+`","reason":"`...)
	b = append(b, reason...)
	return append(b, "\"}\n"...)
}

// Quote is s as a JSON string.
func Quote(s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return b
}
