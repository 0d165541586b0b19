package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	contourv1alpha1 "github.com/projectcontour/contour/apis/projectcontour/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/json"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// object is what every Kubernetes API type's pointer implements.
type object interface {
	metav1.Object
	runtime.Object
}

// knownKinds are the kinds a build may emit, each with its Go type. A kind
// missing here fails the build test: a new kind needs a type to be checked
// against, not a pass.
var knownKinds = map[schema.GroupVersionKind]func() object{
	appsv1.SchemeGroupVersion.WithKind("Deployment"):                     func() object { return &appsv1.Deployment{} },
	corev1.SchemeGroupVersion.WithKind("Service"):                        func() object { return &corev1.Service{} },
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"):                 func() object { return &corev1.ServiceAccount{} },
	corev1.SchemeGroupVersion.WithKind("ConfigMap"):                      func() object { return &corev1.ConfigMap{} },
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"):          func() object { return &policyv1.PodDisruptionBudget{} },
	networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"):            func() object { return &networkingv1.NetworkPolicy{} },
	autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"): func() object { return &autoscalingv2.HorizontalPodAutoscaler{} },
	contourv1alpha1.GroupVersion.WithKind("ContourConfiguration"):        func() object { return &contourv1alpha1.ContourConfiguration{} },
	monitoringv1.SchemeGroupVersion.WithKind("ServiceMonitor"):           func() object { return &monitoringv1.ServiceMonitor{} },
}

// kustomizations are the directories `kustomize build` must accept, with
// the namespace each puts every object in.
var kustomizations = []struct {
	dir, namespace string
}{
	{"base", "tributary"},
	{"overlays/contour", "projectcontour"},
	{"overlays/prometheus", "tributary"},
}

// manifestsDir is the repository's deploy/ folder, which holds the
// manifests these tests check.
const manifestsDir = "../../deploy"

// build runs kustomize on dir (a folder of deploy/), as `kustomize build dir` would, and decodes
// every object it emits strictly.
func build(t *testing.T, dir string) []object {
	t.Helper()
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(manifestsDir, dir))
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []object
	for _, res := range resources.Resources() {
		doc, err := res.AsYAML()
		if err != nil {
			t.Fatalf("kustomize build %s: %s: %v", dir, res.CurId(), err)
		}
		obj, err := decodeStrict(doc)
		if err != nil {
			t.Errorf("kustomize build %s: %s: %v", dir, res.CurId(), err)
			continue
		}
		objs = append(objs, obj)
	}
	if t.Failed() {
		t.FailNow()
	}
	return objs
}

// decodeStrict decodes one YAML document into the Go type of its
// apiVersion and kind, as strictly as the API server's strict field
// validation: an unknown or duplicate field, a field in the wrong case or
// of the wrong type, and an unknown kind are errors.
func decodeStrict(doc []byte) (object, error) {
	data, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return nil, err
	}
	var meta metav1.TypeMeta
	if err := json.UnmarshalCaseSensitivePreserveInts(data, &meta); err != nil {
		return nil, err
	}
	newObject, ok := knownKinds[meta.GroupVersionKind()]
	if !ok {
		return nil, fmt.Errorf("unknown kind %s %s", meta.APIVersion, meta.Kind)
	}
	obj := newObject()
	if err := unmarshalStrict(data, obj); err != nil {
		return nil, fmt.Errorf("%s %s: %w", meta.Kind, obj.GetName(), err)
	}
	return obj, nil
}

// unmarshalStrict decodes JSON into v, failing on an unknown or duplicate
// field, a field in the wrong case, or a value of the wrong type.
func unmarshalStrict(data []byte, v any) error {
	strictErrs, err := json.UnmarshalStrict(data, v)
	if err != nil {
		return err
	}
	if len(strictErrs) > 0 {
		msgs := make([]string, len(strictErrs))
		for i, e := range strictErrs {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// exampleDir holds the manifests the documentation shows but no
// kustomization applies.
const exampleDir = "../../docs/examples"

// exampleDocuments returns the YAML documents of docs/examples/name, each
// converted to JSON with duplicate fields rejected.
func exampleDocuments(t *testing.T, name string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join(exampleDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		data, err := yaml.YAMLToJSONStrict(doc)
		if err != nil {
			t.Fatalf("%s: document %d: %v", name, len(docs)+1, err)
		}
		docs = append(docs, data)
	}
	if len(docs) == 0 {
		t.Fatalf("%s holds no document", name)
	}
	return docs
}

// stripComments drops the lines of a YAML document that are only a
// comment, so that a file's leading comment block is not taken for a
// document of its own.
func stripComments(doc []byte) []byte {
	var kept [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			kept = append(kept, line)
		}
	}
	return bytes.Join(kept, []byte("\n"))
}

// one returns the only object of type T named name (any name when name is
// empty), failing the test unless there is exactly one.
func one[T object](t *testing.T, objs []object, name string) T {
	t.Helper()
	var found []T
	for _, o := range objs {
		if typed, ok := o.(T); ok && (name == "" || o.GetName() == name) {
			found = append(found, typed)
		}
	}
	if len(found) != 1 {
		var zero T
		t.Fatalf("want exactly one %T named %q, found %d", zero, name, len(found))
	}
	return found[0]
}

func TestDecodeStrictRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown kind":        "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n",
		"unknown version":     "apiVersion: policy/v1beta1\nkind: PodDisruptionBudget\nmetadata: {name: x}\n",
		"unknown field":       "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nautomountToken: false\n",
		"field in wrong case": "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nautomountserviceaccounttoken: false\n",
		"duplicate field":     "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nmetadata: {name: y}\n",
		"wrong type":          "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: x}\nautomountServiceAccountToken: \"no\"\n",
		"unknown ServiceMonitor field": "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: x}\n" +
			"spec: {selector: {}, endpoints: [{port: metrics, scrapeInterval: 30s}]}\n",
		"nested unknown field": "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n" +
			"spec: {template: {spec: {containers: [{name: c, securityContext: {readOnlyRootFS: true}}]}}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			if obj, err := decodeStrict([]byte(doc)); err == nil {
				t.Errorf("decoded %#v; want an error", obj)
			}
		})
	}
}

// TestBuild runs every kustomization and checks what all objects share.
func TestBuild(t *testing.T) {
	for _, k := range kustomizations {
		t.Run(k.dir, func(t *testing.T) {
			objs := build(t, k.dir)
			seen := map[string]bool{}
			for _, o := range objs {
				id := fmt.Sprintf("%s/%s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
				if seen[id] {
					t.Errorf("%s emitted twice", id)
				}
				seen[id] = true
				if o.GetNamespace() != k.namespace {
					t.Errorf("%s is in namespace %q, want %q", id, o.GetNamespace(), k.namespace)
				}
			}
			for _, want := range []string{
				"Deployment/tributary", "Service/tributary-sync", "Service/tributary-xds",
				"ServiceAccount/tributary", "PodDisruptionBudget/tributary",
				"HorizontalPodAutoscaler/tributary", "NetworkPolicy/tributary",
			} {
				if !seen[want] {
					t.Errorf("%s is missing", want)
				}
			}
		})
	}
}

// TestLabels checks that every object, and the pods the Deployment makes,
// say what they belong to (app.kubernetes.io/part-of) and which part of it
// they are (app.kubernetes.io/component), the labels that dashboards,
// kubectl's -l and policy tools group by.
func TestLabels(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		check := func(what string, labels map[string]string) {
			for _, key := range []string{"app.kubernetes.io/name", "app.kubernetes.io/part-of"} {
				if got := labels[key]; got != "tributary" {
					t.Errorf("%s: %s is %q, want tributary", what, key, got)
				}
			}
			if labels["app.kubernetes.io/component"] == "" {
				t.Errorf("%s has no app.kubernetes.io/component label", what)
			}
		}
		for _, o := range objs {
			check(fmt.Sprintf("%s/%s", o.GetObjectKind().GroupVersionKind().Kind, o.GetName()), o.GetLabels())
		}
		check("the Deployment's pod template", one[*appsv1.Deployment](t, objs, "tributary").Spec.Template.Labels)
	})
}

// eachBuild runs check on the objects of every kustomization.
func eachBuild(t *testing.T, check func(t *testing.T, objs []object)) {
	for _, k := range kustomizations {
		t.Run(k.dir, func(t *testing.T) { check(t, build(t, k.dir)) })
	}
}

func TestPodSecurity(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		pod := d.Spec.Template.Spec
		if psc := pod.SecurityContext; psc == nil || !deref(psc.RunAsNonRoot) || deref(psc.RunAsUser) == 0 ||
			psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("pod securityContext %+v: want runAsNonRoot, a non-zero runAsUser and the RuntimeDefault seccomp profile", psc)
		}
		if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
			t.Error("the pod mounts a service account token; Tributary never calls the API server")
		}
		sa := one[*corev1.ServiceAccount](t, objs, pod.ServiceAccountName)
		if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
			t.Errorf("ServiceAccount %s mounts its token by default", sa.Name)
		}
		if pod.HostNetwork || pod.HostPID || pod.HostIPC {
			t.Error("the pod shares a host namespace")
		}
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			sc := c.SecurityContext
			if sc == nil {
				t.Errorf("container %s has no securityContext", c.Name)
				continue
			}
			if !deref(sc.ReadOnlyRootFilesystem) {
				t.Errorf("container %s: readOnlyRootFilesystem is not true", c.Name)
			}
			if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("container %s: allowPrivilegeEscalation is not false", c.Name)
			}
			if deref(sc.Privileged) {
				t.Errorf("container %s is privileged", c.Name)
			}
			if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
				t.Errorf("container %s: capabilities %+v, want drop [ALL] and no add", c.Name, sc.Capabilities)
			}
			if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
				t.Errorf("container %s runs as root", c.Name)
			}
		}
	})
}

func TestResourcesAndProbes(t *testing.T) {
	eachBuild(t, func(t *testing.T, objs []object) {
		d := one[*appsv1.Deployment](t, objs, "tributary")
		c := container(t, d)
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := c.Resources.Requests[r]; !ok || q.IsZero() {
				t.Errorf("no %s request", r)
			}
		}
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; !ok || q.IsZero() {
			t.Error("no memory limit")
		}
		for _, p := range []struct {
			name  string
			probe *corev1.Probe
			path  string
		}{{"readiness", c.ReadinessProbe, "/readyz"}, {"liveness", c.LivenessProbe, "/healthz"}} {
			if p.probe == nil || p.probe.HTTPGet == nil {
				t.Errorf("%s probe %+v: want an HTTP GET of %s", p.name, p.probe, p.path)
				continue
			}
			get := p.probe.HTTPGet
			if get.Path != p.path || get.Port.StrVal != "metrics" || (get.Scheme != "" && get.Scheme != corev1.URISchemeHTTP) {
				t.Errorf("%s probe gets %s %s on port %s, want HTTP %s on the metrics port", p.name, get.Scheme, get.Path, get.Port.String(), p.path)
			}
		}
		if _, ok := containerPort(c, "metrics"); !ok {
			t.Error("the probes' port metrics is not a container port")
		}
		var memLimitFromResources bool
		for _, e := range c.Env {
			if e.Name == "GOMEMLIMIT" && e.ValueFrom != nil && e.ValueFrom.ResourceFieldRef != nil &&
				e.ValueFrom.ResourceFieldRef.Resource == "limits.memory" {
				memLimitFromResources = true
			}
		}
		if !memLimitFromResources {
			t.Error("GOMEMLIMIT does not follow limits.memory")
		}
		if d.Spec.Replicas != nil {
			t.Errorf("spec.replicas is %d; the HorizontalPodAutoscaler owns the count", *d.Spec.Replicas)
		}
		if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 {
			t.Errorf("rolling update %+v: want maxUnavailable 0, so a new pod is ready before an old one goes", ru)
		}
		image := c.Image
		if i := strings.LastIndex(image, "/"); i >= 0 {
			image = image[i+1:]
		}
		if !strings.Contains(image, ":") && !strings.Contains(image, "@") || strings.HasSuffix(image, ":latest") {
			t.Errorf("image %q is not pinned to a tag or digest", c.Image)
		}
	})
}

// container returns the Deployment's tributary container.
func container(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	for i, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "tributary" {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatalf("Deployment %s has no container named tributary", d.Name)
	return nil
}

func containerPort(c *corev1.Container, name string) (int32, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

// selects reports whether selector (matchLabels only) picks labels.
func selects(t *testing.T, selector *metav1.LabelSelector, labels map[string]string) bool {
	t.Helper()
	if selector == nil || len(selector.MatchExpressions) > 0 {
		t.Fatalf("selector %+v: want matchLabels only", selector)
	}
	if len(selector.MatchLabels) == 0 {
		return false // an empty selector picks everything: never what is meant here
	}
	for k, v := range selector.MatchLabels {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
