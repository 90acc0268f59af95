package scenarios

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in a scenario, located in its file.
// Line and Column are 1-based; 0 means unknown.
type Error struct {
	File   string
	Line   int
	Column int
	Msg    string
}

// Error returns "file:line: msg" ("file: msg" without a line; "<input>" stands
// for a scenario that has no file).
func (e Error) Error() string {
	file := e.File
	if file == "" {
		file = "<input>"
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", file, e.Line, e.Msg)
	}
	return file + ": " + e.Msg
}

// Errors is every problem found in a scenario, in line order. Parse, Load and
// Compile return it (as an error) so that a user sees all problems at once.
type Errors []Error

// Error joins the problems, one "file:line: msg" per line.
func (es Errors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// errorList collects Errors for one source.
type errorList struct {
	file string
	errs Errors
}

func (l *errorList) addf(line, col int, format string, args ...any) {
	l.errs = append(l.errs, Error{File: l.file, Line: line, Column: col, Msg: fmt.Sprintf(format, args...)})
}

// err returns the collected errors sorted by position, or nil.
func (l *errorList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(l.errs, func(a, b Error) int {
		if c := cmp.Compare(a.Line, b.Line); c != 0 {
			return c
		}
		return cmp.Compare(a.Column, b.Column)
	})
	l.errs = slices.CompactFunc(l.errs, func(a, b Error) bool { return a == b })
	return l.errs
}
