package deploy

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The tests here check that objects which refer to each other by label,
// name or port agree: kubectl apply accepts a Service whose selector or
// targetPort matches nothing, and the mistake shows only as traffic that
// goes nowhere.

func TestServices(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		c := container(t, d)
		podLabels := d.Spec.Template.Labels
		if !selects(t, d.Spec.Selector, podLabels) {
			t.Errorf("the Deployment's selector %v does not pick its own pods %v", d.Spec.Selector.MatchLabels, podLabels)
		}
		for _, want := range []struct {
			service, port string
			headless      bool
		}{
			// The adapter needs every pod's address: headless.
			{"tributary-sync", "grpc", true},
			// Envoys need any one pod: a virtual IP.
			{"tributary-xds", "xds", false},
		} {
			svc := one[*corev1.Service](t, objs, want.service)
			if headless := svc.Spec.ClusterIP == corev1.ClusterIPNone; headless != want.headless {
				t.Errorf("Service %s: headless is %v, want %v", svc.Name, headless, want.headless)
			}
			if svc.Spec.Type != "" && svc.Spec.Type != corev1.ServiceTypeClusterIP {
				t.Errorf("Service %s is of type %s; Tributary is not meant to be reachable from outside the cluster", svc.Name, svc.Spec.Type)
			}
			if svc.Spec.PublishNotReadyAddresses {
				t.Errorf("Service %s publishes pods that are not ready", svc.Name)
			}
			if !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, podLabels) {
				t.Errorf("Service %s selects %v, which the pods (%v) do not carry", svc.Name, svc.Spec.Selector, podLabels)
			}
			if len(svc.Spec.Ports) != 1 {
				t.Fatalf("Service %s has %d ports, want 1 (%s)", svc.Name, len(svc.Spec.Ports), want.port)
			}
			p := svc.Spec.Ports[0]
			number, ok := containerPort(c, want.port)
			switch {
			case p.Name != want.port || p.TargetPort != intstr.FromString(want.port):
				t.Errorf("Service %s port %s targets %s, want the container port named %s", svc.Name, p.Name, p.TargetPort.String(), want.port)
			case !ok:
				t.Errorf("Service %s targets port %s, which the container does not have", svc.Name, want.port)
			case p.Port != number:
				// The adapter dials the Service's port on each pod address
				// it resolves, so the two numbers must be the same.
				t.Errorf("Service %s listens on %d, the container on %d", svc.Name, p.Port, number)
			}
		}
	})
}

// listenFlags names the flag that sets each container port's listen
// address.
var listenFlags = map[string]string{"grpc": "address", "xds": "xds-address", "metrics": "metrics-address"}

// TestServiceAppProtocols checks every Service port's appProtocol against
// what the container serves there. Meshes and gateways (Istio, Gateway API
// implementations) read the field to choose how to talk to the port: a
// port that answers only a TLS handshake must not claim a cleartext
// protocol such as kubernetes.io/h2c, and a plain HTTP port must not claim
// TLS.
func TestServiceAppProtocols(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		c := container(t, d)
		args := serveArgs(t, d)
		// --tls-cert-file puts both gRPC listeners behind TLS
		// (TestContainerArgsServe shakes hands with each); the metrics
		// listener is always plain HTTP, for the kubelet's probes.
		_, grpcTLS := args["tls-cert-file"]
		servesTLS := map[string]bool{"address": grpcTLS, "xds-address": grpcTLS, "metrics-address": false}
		services := 0
		for _, o := range objs {
			svc, ok := o.(*corev1.Service)
			if !ok {
				continue
			}
			services++
			for _, p := range svc.Spec.Ports {
				target := p.TargetPort.StrVal
				flag, known := listenFlags[target]
				if _, declared := containerPort(c, target); p.TargetPort.Type != intstr.String || !known || !declared {
					t.Errorf("Service %s port %s targets %s, not a named container port Tributary listens on", svc.Name, p.Name, p.TargetPort.String())
					continue
				}
				want := "http" // IANA: HTTP over cleartext TCP
				if servesTLS[flag] {
					want = "https" // IANA: HTTP over TLS; ALPN picks HTTP/2 for gRPC
				}
				if got := deref(p.AppProtocol); got != want {
					t.Errorf("Service %s port %s: appProtocol %q; the container serves %s there (TLS: %v), want %q", svc.Name, p.Name, got, flag, servesTLS[flag], want)
				}
			}
		}
		if services == 0 {
			t.Error("no Service")
		}
	})
}

func TestDisruptionBudgetAndAutoscaler(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		pdb := one[*policyv1.PodDisruptionBudget](t, objs, "tributary")
		hpa := one[*autoscalingv2.HorizontalPodAutoscaler](t, objs, "tributary")

		if !selects(t, pdb.Spec.Selector, d.Spec.Template.Labels) {
			t.Errorf("the PodDisruptionBudget selects %v, not the pods", pdb.Spec.Selector.MatchLabels)
		}
		minReplicas := deref(hpa.Spec.MinReplicas)
		switch {
		case pdb.Spec.MaxUnavailable != nil && pdb.Spec.MinAvailable != nil:
			t.Error("the PodDisruptionBudget sets both minAvailable and maxUnavailable")
		case pdb.Spec.MaxUnavailable != nil:
			if n := pdb.Spec.MaxUnavailable.IntValue(); n < 1 || n >= int(minReplicas) {
				t.Errorf("maxUnavailable %s: want at least 1 (or no drain ever succeeds) and below minReplicas %d", pdb.Spec.MaxUnavailable.String(), minReplicas)
			}
		case pdb.Spec.MinAvailable != nil:
			if n := pdb.Spec.MinAvailable.IntValue(); n < 1 || n >= int(minReplicas) {
				t.Errorf("minAvailable %s: want at least 1 and below minReplicas %d", pdb.Spec.MinAvailable.String(), minReplicas)
			}
		default:
			t.Error("the PodDisruptionBudget sets neither minAvailable nor maxUnavailable")
		}

		target := hpa.Spec.ScaleTargetRef
		if target.APIVersion != "apps/v1" || target.Kind != "Deployment" || target.Name != d.Name {
			t.Errorf("the autoscaler scales %s %s %s, not Deployment %s", target.APIVersion, target.Kind, target.Name, d.Name)
		}
		if minReplicas < 2 || hpa.Spec.MaxReplicas < minReplicas {
			t.Errorf("replicas %d..%d: want at least 2, so one can be drained", minReplicas, hpa.Spec.MaxReplicas)
		}
		c := container(t, d)
		for _, m := range hpa.Spec.Metrics {
			if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource.Target.Type == autoscalingv2.UtilizationMetricType {
				// Utilization is a percentage of the request; without
				// one the autoscaler has nothing to compute.
				if _, ok := c.Resources.Requests[m.Resource.Name]; !ok {
					t.Errorf("the autoscaler targets %s utilization, but the container requests no %s", m.Resource.Name, m.Resource.Name)
				}
			}
		}
		if b := hpa.Spec.Behavior; b == nil || b.ScaleDown == nil || deref(b.ScaleDown.StabilizationWindowSeconds) < 300 {
			t.Error("scale-down is not slowed down: each removed replica moves its Envoy streams and sessions")
		}
	})
}

// contourPeer and envoyPeer are the pods of Contour's example installation.
var (
	contourPeer = networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "projectcontour"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "contour"}},
	}
	envoyPeer = networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "projectcontour"}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "envoy"}},
	}
)

func TestNetworkPolicy(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		c := container(t, d)
		np := one[*networkingv1.NetworkPolicy](t, objs, "tributary")
		if !selects(t, &np.Spec.PodSelector, d.Spec.Template.Labels) {
			t.Errorf("the NetworkPolicy selects %v, not the pods", np.Spec.PodSelector.MatchLabels)
		}
		types := map[networkingv1.PolicyType]bool{}
		for _, pt := range np.Spec.PolicyTypes {
			types[pt] = true
		}
		if !types[networkingv1.PolicyTypeIngress] || !types[networkingv1.PolicyTypeEgress] || len(np.Spec.Egress) > 0 {
			t.Errorf("policy types %v with %d egress rules: want ingress restricted and egress denied", np.Spec.PolicyTypes, len(np.Spec.Egress))
		}
		// Who may reach each named container port.
		admitted := map[string][]networkingv1.NetworkPolicyPeer{}
		for i, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 || len(rule.Ports) == 0 {
				t.Errorf("ingress rule %d admits every source or every port", i)
			}
			for _, p := range rule.Ports {
				name := portName(c, p)
				if name == "" {
					t.Errorf("ingress rule %d names port %s, which the container does not have", i, p.Port.String())
					continue
				}
				if p.EndPort != nil {
					t.Errorf("ingress rule %d admits a port range", i)
				}
				admitted[name] = append(admitted[name], rule.From...)
			}
		}
		for port, want := range map[string]networkingv1.NetworkPolicyPeer{"grpc": contourPeer, "xds": envoyPeer} {
			peers := admitted[port]
			if len(peers) != 1 || !equalPeer(peers[0], want) {
				t.Errorf("port %s admits %s; want exactly %s", port, describePeers(peers), describePeers([]networkingv1.NetworkPolicyPeer{want}))
			}
		}
	})
}

// portName names the container port a NetworkPolicy port refers to, by
// name or number; "" when there is none.
func portName(c *corev1.Container, p networkingv1.NetworkPolicyPort) string {
	if p.Port == nil || (p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP) {
		return ""
	}
	for _, cp := range c.Ports {
		if (p.Port.Type == intstr.String && p.Port.StrVal == cp.Name) ||
			(p.Port.Type == intstr.Int && p.Port.IntVal == cp.ContainerPort) {
			return cp.Name
		}
	}
	return ""
}

func describePeers(peers []networkingv1.NetworkPolicyPeer) string {
	var parts []string
	for _, p := range peers {
		switch {
		case p.IPBlock != nil:
			parts = append(parts, "addresses "+p.IPBlock.CIDR)
		default:
			parts = append(parts, fmt.Sprintf("pods %s in namespaces %s",
				metav1.FormatLabelSelector(p.PodSelector), metav1.FormatLabelSelector(p.NamespaceSelector)))
		}
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func equalPeer(a, b networkingv1.NetworkPolicyPeer) bool {
	sameSelector := func(x, y *metav1.LabelSelector) bool {
		if x == nil || y == nil {
			return x == y
		}
		if len(x.MatchExpressions)+len(y.MatchExpressions) > 0 || len(x.MatchLabels) != len(y.MatchLabels) {
			return false
		}
		for k, v := range x.MatchLabels {
			if y.MatchLabels[k] != v {
				return false
			}
		}
		return true
	}
	return a.IPBlock == nil && b.IPBlock == nil &&
		sameSelector(a.PodSelector, b.PodSelector) && sameSelector(a.NamespaceSelector, b.NamespaceSelector)
}
