package server

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// problems collects what is wrong with a request.
type problems struct {
	count      int
	violations []*errdetails.BadRequest_FieldViolation
}

// add counts and records one problem.
func (p *problems) add(field, reason, message string) {
	p.count++
	p.record(field, reason, message)
}

// record keeps a violation if there is room; the caller has counted it.
func (p *problems) record(field, reason, message string) {
	if len(p.violations) < maxReportedViolations {
		p.violations = append(p.violations, &errdetails.BadRequest_FieldViolation{Field: field, Reason: reason, Description: message})
	}
}

// message names the first problem and counts the others.
func (p *problems) message() string {
	msg := p.violations[0].Description
	switch more := p.count - 1; {
	case more == 1:
		msg += " (and 1 more problem)"
	case more > 1:
		msg += fmt.Sprintf(" (and %d more problems)", more)
	}
	return msg
}

// err is nil for a valid request, else InvalidArgument with the first
// problem as message and the recorded ones as BadRequest details.
func (p *problems) err() error {
	if p.count == 0 {
		return nil
	}
	st := status.New(codes.InvalidArgument, p.message())
	if detailed, err := st.WithDetails(&errdetails.BadRequest{FieldViolations: p.violations}); err == nil {
		st = detailed
	}
	return st.Err()
}

const (
	dns1123LabelRule     = "at most 63 lowercase letters, digits or '-', starting and ending with a letter or digit"
	dns1123SubdomainRule = "at most 253 lowercase letters, digits, '-' or '.', each dot-separated part starting and ending with a letter or digit"
)

// badText says why s cannot be used as a name in Envoy configuration, or ""
// if it can.
func badText(s string) string {
	if !utf8.ValidString(s) {
		return "is not valid UTF-8"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "contains a control character"
		}
	}
	return ""
}
