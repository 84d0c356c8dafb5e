package contract

import (
	"errors"
	"fmt"
)

// Error is one problem in a contract or a schema file it references, with
// where it is: the file, the line and column where known, and the JSON
// pointer of the offending value within that file.
type Error struct {
	// File is the path of the file, as given or relative to the contract.
	File string
	// Line and Col are 1-based; 0 when unknown.
	Line, Col int
	// Pointer is the JSON pointer of the value in File ("" for the root).
	Pointer string
	// Message says what is wrong and, where possible, what to do.
	Message string
}

// Error renders "file:line:col: at /pointer: message".
func (e *Error) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Col)
	}
	if e.Pointer != "" {
		return fmt.Sprintf("%s: at %s: %s", loc, e.Pointer, e.Message)
	}
	return fmt.Sprintf("%s: %s", loc, e.Message)
}

// errorAt builds an [Error] for a node, reporting it at its original source.
func errorAt(n *Node, format string, args ...any) *Error {
	e := &Error{Message: fmt.Sprintf(format, args...)}
	if s := n.Source(); s != nil {
		if s.Doc != nil {
			e.File = s.Doc.Path
		}
		e.Line, e.Col, e.Pointer = s.Line, s.Col, s.Pointer
	}
	return e
}

// errorList collects errors so one run reports every problem it can.
type errorList []error

func (l *errorList) add(err error) {
	if err != nil {
		*l = append(*l, err)
	}
}

func (l errorList) err() error { return errors.Join(l...) }
