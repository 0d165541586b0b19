package model

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/tributary-dev/tributary/internal/objectgen"
	"github.com/tributary-dev/tributary/internal/source"
)

// manyTargetsWorld is n Services, each with one port and one slice of one
// endpoint of its own, and an ExtensionService naming every Service twice
// over: 2n targets, each Service port named more than once.
func manyTargetsWorld(n int) source.Objects {
	objs := source.Objects{ExtensionServices: []source.ExtensionService{{Meta: source.Meta{Namespace: testNamespace, Name: "many"}}}}
	spec := &objs.ExtensionServices[0].Spec
	spec.Protocol = xtStr("h2c")
	for round := range 2 {
		for i := range n {
			svc := fmt.Sprintf("svc-%d", i)
			spec.Services = append(spec.Services, source.ExtensionServiceTarget{Name: svc, Port: 80, Weight: uint32(round + 1)})
			if round == 0 {
				objs.Services = append(objs.Services, testService(svc, servicePort("http", 80)))
				objs.EndpointSlices = append(objs.EndpointSlices, objectgen.Slice(svc+"-a", svc, "IPv4",
					objectgen.Ports(objectgen.TCPPort("http", 8080)), objectgen.ReadyAt(fmt.Sprintf("10.0.%d.%d", i>>8, i&0xff))))
			}
		}
	}
	return objs
}

// TestBuildManyDuplicateTargets: a Service port named twice is found by
// lookup, not by comparing each target with every earlier one, and says so
// as before: one warning per port, at its second naming, weights summed. A
// Builder that has built many targets builds few correctly afterwards.
func TestBuildManyDuplicateTargets(t *testing.T) {
	const n = 3 * maxKeptTargetMap
	objs := manyTargetsWorld(n)
	for _, kind := range builderKinds {
		b := kind.new(NewIndex(&objs))
		ec, st := buildOf(b, &objs.ExtensionServices[0], nil)
		if ec == nil {
			t.Fatalf("%s: invalid: %+v", kind.name, st.Condition.Errors)
		}
		if len(ec.Localities) != n || len(st.Condition.Warnings) != n {
			t.Fatalf("%s: %d localities and %d warnings, want %d of each", kind.name, len(ec.Localities), len(st.Condition.Warnings), n)
		}
		for i, loc := range ec.Localities {
			want := Locality{SubZone: fmt.Sprintf("ns/svc-%d/80", i), Weight: 3, Endpoints: eps(fmt.Sprintf("10.0.%d.%d", i>>8, i&0xff), 8080)}
			if diff := cmp.Diff(want, loc); diff != "" {
				t.Fatalf("%s: locality %d (-want +got):\n%s", kind.name, i, diff)
			}
			wantWarning := warning(SubConditionSpec, ReasonDuplicateTarget, fmt.Sprintf(
				`port 80 of Service "ns/svc-%d" is named more than once in spec.services; it is one locality whose weight is the sum of its entries`, i))
			if diff := cmp.Diff(wantWarning, st.Condition.Warnings[i]); diff != "" {
				t.Fatalf("%s: warning %d (-want +got):\n%s", kind.name, i, diff)
			}
		}

		small := source.ExtensionService{Meta: source.Meta{Namespace: testNamespace, Name: "small"}, Spec: source.ExtensionServiceSpec{
			Protocol: xtStr("h2c"),
			Services: []source.ExtensionServiceTarget{{Name: "svc-1", Port: 80}, {Name: "svc-0", Port: 80}},
		}}
		ec, st = buildOf(b, &small, nil)
		if ec == nil || len(st.Condition.Warnings) != 0 {
			t.Fatalf("%s: small after many: %v, %+v", kind.name, ec, st.Condition)
		}
		want := []Locality{
			{SubZone: "ns/svc-1/80", Weight: 1, Endpoints: eps("10.0.0.1", 8080)},
			{SubZone: "ns/svc-0/80", Weight: 1, Endpoints: eps("10.0.0.0", 8080)},
		}
		if diff := cmp.Diff(want, ec.Localities); diff != "" {
			t.Errorf("%s: small after many (-want +got):\n%s", kind.name, diff)
		}
	}
}

// BenchmarkBuildManyTargets: one ExtensionService with n targets (n/2
// Services, each named twice). Finding the repeated ones by comparing each
// target with every earlier one was quadratic: 40,000 targets took a minute.
func BenchmarkBuildManyTargets(b *testing.B) {
	for _, n := range []int{1000, 5000, 10000, 20000, 40000} {
		objs := manyTargetsWorld(n / 2)
		for _, kind := range builderKinds {
			b.Run(fmt.Sprintf("targets=%d/%s", n, kind.name), func(b *testing.B) {
				builder := kind.new(NewIndex(&objs))
				b.ReportAllocs()
				for b.Loop() {
					if ec, _ := buildOf(builder, &objs.ExtensionServices[0], nil); ec == nil {
						b.Fatal("invalid")
					}
				}
			})
		}
	}
}

// caBundleWorld is xtWorld with a CA Secret "bundle" of certs copies of one
// certificate, and n ExtensionServices validating against it, with the
// clientCertificate Secret "client-bundle" holding certs certificates too.
func caBundleWorld(t testing.TB, n, certs int) (source.Objects, source.Settings) {
	objs := xtWorld(t)
	bundle := bytes.Repeat(xtCertPEM(t, 3, "bundle-ca"), certs)
	objs.Secrets = append(objs.Secrets,
		source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "bundle"}, Type: "Opaque", CACrt: bundle},
		source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "client-bundle"}, Type: "kubernetes.io/tls", TLSCrt: bundle})
	for i := range n {
		objs.ExtensionServices = append(objs.ExtensionServices, source.ExtensionService{
			Meta: source.Meta{Namespace: xtNS, Name: fmt.Sprintf("authz-%d", i)},
			Spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: &source.UpstreamValidation{CASecret: "bundle", SubjectName: "authz"}},
		})
	}
	return objs, source.Settings{ClientCertificate: &source.NamespacedName{Namespace: xtNS, Name: "client-bundle"}}
}

// BenchmarkBuildOverOneCABundle: n ExtensionServices validating against
// one CA Secret of 1,000 certificates, with a 1,000-certificate client
// certificate bundle, on a fresh Index each time (so nothing is kept from
// one round to the next). Parsing the bundles once per ExtensionService
// made 1,000 of them cost 37 s; per Secret, it is one parse of each.
func BenchmarkBuildOverOneCABundle(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		objs, settings := caBundleWorld(b, n, 1000)
		b.Run(fmt.Sprintf("extensionServices=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				builder := NewBuilder(NewIndex(&objs), settings)
				for i := range objs.ExtensionServices {
					if ec, _ := buildOf(builder, &objs.ExtensionServices[i], nil); ec == nil {
						b.Fatal("invalid")
					}
				}
			}
		})
	}
}

// TestSecretChecksSharedByBuilders: Builders on several goroutines over one
// Index share the checks of a Secret (the race detector watches the
// sharing) and agree on the result.
func TestSecretChecksSharedByBuilders(t *testing.T) {
	objs, settings := caBundleWorld(t, 64, 3)
	idx := NewIndex(&objs)
	statuses := make([]Status, len(objs.ExtensionServices))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			b := NewBuilder(idx, settings)
			for i := w; i < len(objs.ExtensionServices); i += 4 {
				ec, st := buildOf(b, &objs.ExtensionServices[i], nil)
				if ec == nil {
					t.Errorf("%s invalid: %+v", st.Name, st.Condition.Errors)
				}
				statuses[i] = st
			}
		})
	}
	wg.Wait()
	for i, st := range statuses {
		if st.ClusterName != ClusterName(xtNS, objs.ExtensionServices[i].Name) || len(st.Condition.Warnings) != 0 {
			t.Errorf("status %d: %+v", i, st)
		}
	}
}

// TestSecretChecksFollowTheSecret: what is made of a Secret goes with it:
// replacing it with a broken one, then deleting it, is seen by the next
// Build.
func TestSecretChecksFollowTheSecret(t *testing.T) {
	objs, settings := caBundleWorld(t, 1, 2)
	settings.ClientCertificate = nil
	idx := NewIndex(&objs)
	b := NewBuilder(idx, settings)
	es := &objs.ExtensionServices[len(objs.ExtensionServices)-1]
	bundleName := source.NamespacedName{Namespace: xtNS, Name: "bundle"}

	if ec, st := buildOf(b, es, nil); ec == nil {
		t.Fatalf("valid bundle: %+v", st.Condition.Errors)
	}
	idx.PutSecret(&source.Secret{Meta: source.Meta{Namespace: xtNS, Name: "bundle"}, Type: "Opaque", CACrt: []byte("no PEM here")})
	_, st := buildOf(b, es, nil)
	want := []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation,
		xtPolicyErr+`invalid CA Secret "ext/bundle": invalid CA certificate bundle: failed to locate certificate`)}
	if diff := cmp.Diff(want, st.Condition.Errors); diff != "" {
		t.Errorf("after replacing the Secret (-want +got):\n%s", diff)
	}
	idx.DeleteSecret(bundleName)
	_, st = buildOf(b, es, nil)
	want = []SubCondition{xtSpecErr(ReasonTLSUpstreamValidation, xtPolicyErr+`invalid CA Secret "ext/bundle": Secret not found`)}
	if diff := cmp.Diff(want, st.Condition.Errors); diff != "" {
		t.Errorf("after deleting the Secret (-want +got):\n%s", diff)
	}
}

// TestCABundleGivenToEnvoy: a clean bundle reaches the Cluster byte for
// byte; one with blocks left out reaches it as its good certificates alone,
// since Envoy refuses a whole bundle with one undecodable block.
func TestCABundleGivenToEnvoy(t *testing.T) {
	good := xtCertPEM(t, 1, "test-ca")
	broken := []byte("-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n")
	for _, tc := range []struct {
		name      string
		ca, want  []byte
		wantWarns int
	}{
		{"clean, with text around", append([]byte("# our CA\n"), good...), append([]byte("# our CA\n"), good...), 0},
		{"a broken block after a good one", append(append([]byte{}, good...), broken...), good, 1},
	} {
		objs := xtWorld(t)
		objs.Secrets[0].CACrt = tc.ca
		ec, st := xtBuild(t, objs, source.Settings{}, source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("ca")})
		if ec == nil || len(st.Condition.Warnings) != tc.wantWarns {
			t.Fatalf("%s: %v, %+v", tc.name, ec, st.Condition)
		}
		if !bytes.Equal(ec.TLS.CACertificate, tc.want) {
			t.Errorf("%s: CA certificate\n%s\nwant\n%s", tc.name, ec.TLS.CACertificate, tc.want)
		}
	}
}

// TestStatusQuotesBounded: a status message repeats at most
// source.MaxQuotedBytes of any string of the input, however long.
func TestStatusQuotesBounded(t *testing.T) {
	long := string(bytes.Repeat([]byte("x"), 1<<20))
	objs := xtWorld(t)
	_, st := xtBuild(t, objs, source.Settings{}, source.ExtensionServiceSpec{
		Services:      []source.ExtensionServiceTarget{{Name: long, Port: 1}},
		Protocol:      &long,
		TimeoutPolicy: &source.TimeoutPolicy{Response: long},
	})
	q := `"ext/` + long[:source.MaxQuotedBytes-4] + `"...`
	want := []SubCondition{
		xtSpecErr(ReasonTimeoutPolicyNotValid, `spec.timeoutPolicy failed to parse: error parsing response timeout: unable to parse timeout string "`+long[:source.MaxQuotedBytes]+`"...: time: invalid duration "`+long[:2*source.MaxQuotedBytes-len(`time: invalid duration "`)]+`...`),
		xtSpecErr(ReasonUnsupportedProtocol, `spec.protocol "`+long[:source.MaxQuotedBytes]+`"... is not supported: use "h2", "h2c" or "http/1.1"`),
		xtSvcErr(ReasonServiceUnresolvedReference, `unresolved service `+q+`: service `+q+` not found`),
	}
	if diff := cmp.Diff(want, st.Condition.Errors); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestDelegationGrantsFollowChanges: the grants worked out for a namespace
// go with any change to its delegations.
func TestDelegationGrantsFollowChanges(t *testing.T) {
	objs := xtWorld(t)
	idx := NewIndex(&objs)
	b := NewBuilder(idx, source.Settings{})
	ca := source.NamespacedName{Namespace: "certs", Name: "ca"}
	steps := []struct {
		change func()
		want   bool
	}{
		{func() {}, false},
		{func() { idx.PutTLSCertificateDelegation(ptr(xtDelegation("ca", "a", xtNS))) }, true},
		{func() { idx.PutTLSCertificateDelegation(ptr(xtDelegation("ca", "a"))) }, false}, // same name, replaced
		{func() {
			d := xtDelegation("ca", "*")
			d.Name = "everyone"
			idx.PutTLSCertificateDelegation(&d)
		}, true},
		{func() {
			idx.DeleteTLSCertificateDelegation(source.NamespacedName{Namespace: "certs", Name: "everyone"})
		}, false},
	}
	for i, step := range steps {
		step.change()
		if got := b.delegationPermitted(ca, xtNS); got != step.want {
			t.Errorf("step %d: permitted = %v, want %v", i, got, step.want)
		}
	}
}

// BenchmarkBuildManyDelegations: 1,000 ExtensionServices validating against
// a Secret of a namespace with 1,000 delegations. Each ExtensionService
// walked every delegation of the namespace; now the grants are worked out
// once and each costs a lookup.
func BenchmarkBuildManyDelegations(b *testing.B) {
	objs := xtWorld(b)
	for i := range 1000 {
		d := xtDelegation(fmt.Sprintf("other-%d", i), "a", "b", "c")
		d.Name = fmt.Sprintf("d-%d", i)
		objs.TLSCertificateDelegations = append(objs.TLSCertificateDelegations, d)
	}
	objs.TLSCertificateDelegations = append(objs.TLSCertificateDelegations, xtDelegation("ca", xtNS))
	for i := range 1000 {
		objs.ExtensionServices = append(objs.ExtensionServices, source.ExtensionService{
			Meta: source.Meta{Namespace: xtNS, Name: fmt.Sprintf("authz-%d", i)},
			Spec: source.ExtensionServiceSpec{Services: xtTarget, Validation: xtValidation("certs/ca")},
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		builder := NewBuilder(NewIndex(&objs), source.Settings{})
		for i := range objs.ExtensionServices {
			if ec, _ := buildOf(builder, &objs.ExtensionServices[i], nil); ec == nil {
				b.Fatal("invalid")
			}
		}
	}
}
