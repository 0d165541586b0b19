package contour_test

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/tributary-dev/tributary/client/contour"
)

// serveDNS answers DNS queries over UDP on loopback, as the cluster DNS
// answers for a headless Service: the A records and the SRV records of its
// ready pods; every other question gets an empty answer.
func serveDNS(t *testing.T, a map[string][]net.IP, srv map[string][]net.SRV) *net.Resolver {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		pc.Close()
		<-done
	})
	go func() {
		defer close(done)
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, err := answerDNS(buf[:n], a, srv); err == nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
}

func answerDNS(query []byte, a map[string][]net.IP, srv map[string][]net.SRV) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true})
	b.EnableCompression()
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rh := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 5}
	switch q.Type {
	case dnsmessage.TypeA:
		for _, ip := range a[q.Name.String()] {
			if err := b.AResource(rh, dnsmessage.AResource{A: [4]byte(ip.To4())}); err != nil {
				return nil, err
			}
		}
	case dnsmessage.TypeSRV:
		for _, s := range srv[q.Name.String()] {
			target, err := dnsmessage.NewName(s.Target)
			if err != nil {
				return nil, err
			}
			if err := b.SRVResource(rh, dnsmessage.SRVResource{Priority: s.Priority, Weight: s.Weight, Port: s.Port, Target: target}); err != nil {
				return nil, err
			}
		}
	}
	return b.Finish()
}

// TestLookupReplicas resolves a headless Service through a DNS server that
// answers like the cluster's: by port number, each pod's address with that
// port; by port name, each pod's name and port from the SRV records.
func TestLookupReplicas(t *testing.T) {
	const service = "tributary-sync.tributary.svc.cluster.local."
	r := serveDNS(t,
		map[string][]net.IP{service: {net.ParseIP("10.244.1.7"), net.ParseIP("10.244.2.9")}},
		map[string][]net.SRV{"_grpc._tcp." + service: {
			{Target: "10-244-1-7.tributary-sync.tributary.svc.cluster.local.", Port: 8081, Weight: 50},
			{Target: "10-244-2-9.tributary-sync.tributary.svc.cluster.local.", Port: 8081, Weight: 50},
		}},
	)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, tc := range []struct {
		port string
		want []string
	}{
		{"8081", []string{"10.244.1.7:8081", "10.244.2.9:8081"}},
		{"grpc", []string{
			"10-244-1-7.tributary-sync.tributary.svc.cluster.local:8081",
			"10-244-2-9.tributary-sync.tributary.svc.cluster.local:8081",
		}},
	} {
		got, err := contour.LookupReplicas(r, service, tc.port)(ctx)
		if err != nil {
			t.Errorf("port %s: %v", tc.port, err)
			continue
		}
		slices.Sort(got)
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("port %s (-want +got):\n%s", tc.port, d)
		}
	}
	if got, err := contour.LookupReplicas(r, "missing.tributary.svc.cluster.local.", "8081")(ctx); err == nil {
		t.Errorf("a name with no records gave %v and no error", got)
	}
}
