package model

import (
	"fmt"

	"github.com/tributary-dev/tributary/internal/source"
)

// Constructors of the test objects the endpoint and slice-cache tests share.

func ptr[T any](v T) *T { return &v }

func testService(name string, ports ...source.ServicePort) source.Service {
	return source.Service{Meta: source.Meta{Namespace: testNamespace, Name: name}, Type: "ClusterIP", Ports: ports}
}

func servicePort(name string, port int32) source.ServicePort {
	return source.ServicePort{Name: name, Port: port, TargetPort: fmt.Sprint(port), Protocol: "TCP"}
}

func warning(typ, reason, message string) SubCondition {
	return SubCondition{Type: typ, Status: ConditionTrue, Reason: reason, Message: message}
}

func eps(pairs ...any) []Endpoint {
	var out []Endpoint
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, Endpoint{Address: source.MakeAddress(pairs[i].(string)), Port: uint32(pairs[i+1].(int))})
	}
	return out
}

// buildOf is b.Build with the status returned, as tests compare it.
func buildOf(b *Builder, es *source.ExtensionService, targets []TargetService) (*ExtensionCluster, Status) {
	var st Status
	ec := b.Build(es, targets, &st)
	return ec, st
}
