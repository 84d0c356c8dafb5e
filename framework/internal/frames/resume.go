package frames

import (
	"strconv"
	"strings"
)

// ResumePoint is where a watcher asks its stream to start: after revision
// Rev of the topic history named History. Its text form, the watch
// request's since parameter, is "<history>.<rev>".
type ResumePoint struct {
	History string
	Rev     uint64
}

// String is the resume point as a since parameter, "" for none.
func (p ResumePoint) String() string {
	if p.History == "" {
		return ""
	}
	return p.History + "." + strconv.FormatUint(p.Rev, 10)
}

// ParseResumePoint reads a since parameter; ok is false for anything that
// is not one, which a server answers with a snapshot, never an error.
func ParseResumePoint(s string) (ResumePoint, bool) {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 {
		return ResumePoint{}, false
	}
	rev, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return ResumePoint{}, false
	}
	return ResumePoint{History: s[:i], Rev: rev}, true
}
