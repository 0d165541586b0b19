package main

import (
	"net/netip"
	"testing"
)

func TestLoopbackFor(t *testing.T) {
	mapped := map[string]string{
		"192.0.2.1:8080":               "127.0.0.1:8080",
		"192.0.2.0:1":                  "127.0.0.1:1",
		"192.0.2.255:65535":            "127.0.0.1:65535",
		"[::ffff:192.0.2.7]:9000":      "127.0.0.1:9000",
		"[2001:db8::1]:443":            "[::1]:443",
		"[2001:db8:ffff:ffff::9]:9000": "[::1]:9000",
	}
	for in, want := range mapped {
		got, err := loopbackFor(in)
		if err != nil || got != netip.MustParseAddrPort(want) {
			t.Errorf("loopbackFor(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	refused := []string{
		"127.0.0.1:8080",       // loopback itself is not a documentation address
		"192.0.3.1:8080",       // just past 192.0.2.0/24
		"192.0.1.255:8080",     // just before it
		"198.51.100.1:8080",    // another documentation range, not mapped
		"10.0.0.1:8080",        // a private network
		"8.8.8.8:53",           // the Internet
		"[::1]:443",            // IPv6 loopback
		"[2001:db9::1]:443",    // just past 2001:db8::/32
		"[fe80::1%eth0]:443",   // link-local with a zone
		"[2001:db8::1%lo]:443", // a documentation address with a zone
		"example.com:443",      // a name, which the dialer would resolve
		"192.0.2.1",            // no port
		"",
	}
	for _, in := range refused {
		if got, err := loopbackFor(in); err == nil {
			t.Errorf("loopbackFor(%q) = %v; want it refused", in, got)
		}
	}
}
