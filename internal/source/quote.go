package source

import (
	"strconv"
	"unicode/utf8"
)

// MaxQuotedBytes bounds how much of one client-supplied string a message
// repeats. Every string of the input reaches some message (a status, an
// error, a log line), and the input is the client's to choose: without a
// bound, a 1 MiB target name becomes a 1 MiB status message, twice over
// when the message names it twice.
const MaxQuotedBytes = 100

// Quote quotes s as %q does, cut to its first MaxQuotedBytes bytes (on a
// character boundary) and marked with a trailing "..." when it is longer.
// It is how every message quotes input, so that messages stay small
// whatever the input holds.
func Quote(s string) string {
	if len(s) <= MaxQuotedBytes {
		return strconv.Quote(s)
	}
	return strconv.Quote(Prefix(s, MaxQuotedBytes)) + "..."
}

// Truncate shortens a message built from input to at most twice
// MaxQuotedBytes, on a character boundary, marking the cut with "...": for
// messages that hold input but do not quote it (an error from a parser that
// repeats what it was given).
func Truncate(s string) string {
	if len(s) <= 2*MaxQuotedBytes {
		return s
	}
	return Prefix(s, 2*MaxQuotedBytes) + "..."
}

// Prefix is the longest prefix of s of at most n bytes that does not end
// inside a UTF-8 sequence.
func Prefix(s string, n int) string {
	if n >= len(s) {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
