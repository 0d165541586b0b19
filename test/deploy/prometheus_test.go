package deploy

import (
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The ServiceMonitor is decoded strictly into the Prometheus Operator's own
// Go type (github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring,
// a module of API types only), so a field the Operator does not know fails
// the build test as the API server would.

// TestPrometheusOverlay follows the chain the Operator follows: the
// ServiceMonitor selects Services by label in its own namespace, takes the
// Service port it names, and scrapes that port's endpoints, the pods.
// Each link that picks nothing is a scrape that never happens, with no
// error anywhere.
func TestPrometheusOverlay(t *testing.T) {
	objs := build(t, "overlays/prometheus")
	sm := one[*monitoringv1.ServiceMonitor](t, objs, "tributary")
	d := one[*appsv1.Deployment](t, objs, "tributary")
	c := container(t, d)

	if ns := sm.Spec.NamespaceSelector; ns.Any || len(ns.MatchNames) > 0 {
		t.Errorf("namespaceSelector %+v: want none, the ServiceMonitor's own namespace", ns)
	}
	var selected []*corev1.Service
	for _, o := range objs {
		if svc, ok := o.(*corev1.Service); ok && selects(t, &sm.Spec.Selector, svc.Labels) {
			selected = append(selected, svc)
		}
	}
	if len(selected) != 1 || selected[0].Name != "tributary-metrics" {
		var names []string
		for _, svc := range selected {
			names = append(names, svc.Name)
		}
		t.Fatalf("the ServiceMonitor selects Services %v, want only tributary-metrics", names)
	}
	svc := selected[0]
	if !selects(t, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, d.Spec.Template.Labels) {
		t.Errorf("Service %s selects %v, which the pods (%v) do not carry", svc.Name, svc.Spec.Selector, d.Spec.Template.Labels)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s has a virtual IP; Prometheus scrapes its endpoints, so it should be headless", svc.Name)
	}
	if len(sm.Spec.Endpoints) != 1 {
		t.Fatalf("the ServiceMonitor has %d endpoints, want 1", len(sm.Spec.Endpoints))
	}
	ep := sm.Spec.Endpoints[0]
	var port *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Name == ep.Port {
			port = &svc.Spec.Ports[i]
		}
	}
	switch {
	case port == nil:
		t.Errorf("the ServiceMonitor scrapes port %q, which Service %s does not have", ep.Port, svc.Name)
	case port.TargetPort != intstr.FromString("metrics"):
		t.Errorf("Service %s port %s targets %s, want the container port metrics", svc.Name, port.Name, port.TargetPort.String())
	default:
		if number, _ := containerPort(c, "metrics"); port.Port != number {
			t.Errorf("Service %s listens on %d, the container's metrics port on %d", svc.Name, port.Port, number)
		}
	}
	if ep.Path != "/metrics" {
		t.Errorf("the ServiceMonitor scrapes %q, want /metrics", ep.Path)
	}
	if ep.Scheme != nil && !strings.EqualFold(string(*ep.Scheme), "http") {
		t.Errorf("the ServiceMonitor scrapes over %s; the metrics port serves plain HTTP", *ep.Scheme)
	}
	for key := range d.Spec.Template.Annotations {
		if strings.HasPrefix(key, "prometheus.io/") {
			t.Errorf("the pods keep the annotation %s: a Prometheus that also discovers pods by annotation would scrape them twice", key)
		}
	}
}

// scrapePaths returns the HTTP paths a Prometheus is told to scrape on
// the metrics port: the pods' prometheus.io/path annotation and each
// ServiceMonitor endpoint's path.
func scrapePaths(t *testing.T, objs []object) []string {
	t.Helper()
	var paths []string
	if path, ok := one[*appsv1.Deployment](t, objs, "tributary").Spec.Template.Annotations["prometheus.io/path"]; ok {
		paths = append(paths, path)
	}
	for _, o := range objs {
		if sm, ok := o.(*monitoringv1.ServiceMonitor); ok {
			for _, ep := range sm.Spec.Endpoints {
				paths = append(paths, ep.Path)
			}
		}
	}
	return paths
}
