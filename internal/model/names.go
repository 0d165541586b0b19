package model

import "strings"

// IsDNS1123Label reports whether s is a DNS-1123 label, the form of a
// Kubernetes namespace's name.
func IsDNS1123Label(s string) bool {
	return len(s) <= 63 && isLowercaseDNSLabel(s)
}

// IsDNS1123Subdomain reports whether s is a DNS-1123 subdomain, the form of
// the name of most Kubernetes objects (a Service's, a Secret's).
func IsDNS1123Subdomain(s string) bool {
	if len(s) > 253 {
		return false
	}
	for part := range strings.SplitSeq(s, ".") {
		if !isLowercaseDNSLabel(part) {
			return false
		}
	}
	return true
}

// isLowercaseDNSLabel reports whether s is non-empty, made of [a-z0-9-],
// and starts and ends with a letter or digit (its length is the caller's
// to bound).
func isLowercaseDNSLabel(s string) bool {
	if s == "" || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}
