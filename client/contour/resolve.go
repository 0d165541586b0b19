package contour

import (
	"context"
	"net"
	"strconv"
	"strings"
	"time"
)

// DefaultResolveInterval is how often a ReplicatedAdapter looks its
// replicas up again. CoreDNS answers for a headless Service with a 5 s TTL,
// so a replica that appears is found within about 15 s; one that vanishes
// is noticed at once by its broken connection, DNS only ends its session.
const DefaultResolveInterval = 10 * time.Second

// ResolveFunc returns the address (host:port) of every Tributary replica.
type ResolveFunc func(ctx context.Context) ([]string, error)

// LookupReplicas returns a ResolveFunc that finds the replicas behind a
// headless Service (clusterIP: None), whose DNS name has one record per
// ready pod. port is a number, giving the pods' addresses (A/AAAA records)
// with that port, or the name of a Service port ("grpc"), giving each pod's
// name and port from the SRV records _<port>._tcp.<service>. A nil r is
// net.DefaultResolver.
func LookupReplicas(r *net.Resolver, service, port string) ResolveFunc {
	if r == nil {
		r = net.DefaultResolver
	}
	if _, err := strconv.ParseUint(port, 10, 16); err == nil {
		return func(ctx context.Context) ([]string, error) {
			hosts, err := r.LookupHost(ctx, service)
			if err != nil {
				return nil, err
			}
			addrs := make([]string, len(hosts))
			for i, h := range hosts {
				addrs[i] = net.JoinHostPort(h, port)
			}
			return addrs, nil
		}
	}
	return func(ctx context.Context) ([]string, error) {
		_, records, err := r.LookupSRV(ctx, port, "tcp", service)
		if err != nil {
			return nil, err
		}
		addrs := make([]string, len(records))
		for i, rec := range records {
			addrs[i] = net.JoinHostPort(strings.TrimSuffix(rec.Target, "."), strconv.Itoa(int(rec.Port)))
		}
		return addrs, nil
	}
}
