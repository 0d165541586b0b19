// Package session is the incremental engine behind Sync: it holds one
// session's objects, applies batches of changes to them, rebuilds only the
// ExtensionServices a batch touches, and says what changed in the output.
//
// It has no gRPC in it. The server feeds it checked batches and streams the
// deltas it returns; an Outbox between the two merges deltas per resource
// when the client reads slower than it writes.
//
// A Session finds what a batch touches through reverse indexes from the
// names an ExtensionService's spec refers to (its target Services, which
// are also the keys of their EndpointSlices; its CA Secret; the namespace
// whose delegations decide whether it may use that Secret) back to the
// ExtensionServices. It rebuilds those alone, serialising and hashing each
// resource once, and compares the content hash with the version it last
// reported, so an unchanged resource is never sent again. Resource versions
// stay content hashes; only the version of a whole output needs to be
// unique per server instance, which NextVersion gives.
package session

import (
	"context"
	"slices"

	"github.com/tributary-dev/tributary/internal/model"
	"github.com/tributary-dev/tributary/internal/source"
	"github.com/tributary-dev/tributary/internal/translate"
)

// Ref names one input object. Its Kind is one of source.Kinds(): the API
// boundary checks it, and the kind table is indexed by it.
type Ref struct {
	Kind source.Kind
	Name source.NamespacedName
}

// Batch is one set of changes, applied atomically. It has been checked at
// the API boundary like a Translate request: every upsert satisfies package
// source's guarantees, names are unique per kind within Upserts, and no
// object is both upserted and deleted.
type Batch struct {
	Upserts source.Objects
	Deletes []Ref
}

// Session is one Sync session's objects and output. It is not safe for
// concurrent use: one goroutine applies batches.
//
// A Session keeps, per ExtensionService, only the versions of its two
// resources and its status: enough to tell what a rebuild changed. It does
// not keep resource bodies, which would double its memory; State rebuilds
// them instead.
type Session struct {
	settings source.Settings
	index    *model.Index

	extensions map[source.NamespacedName]*extension
	// Reverse indexes: who reads what (see reads).
	byTarget              dependents[source.NamespacedName]
	bySecret              dependents[source.NamespacedName]
	byDelegationNamespace dependents[string]

	translator *translate.Incremental
	// counts holds the number of objects held, by kind.
	counts [source.KindEnd]int

	// estimator bounds the output of each ExtensionService (see
	// checkOutput); output is the sum of the extensions' estimates.
	estimator *translate.Estimator
	output    int64

	// Scratch reused from one Apply to the next.
	dirty    map[*extension]change
	order    []*extension
	rebuild  []*extension // the ExtensionServices of rebuilds, in order
	rebuilds []translate.Rebuild
	// undo lists what the current Apply changed, to take back (rollback).
	undo []undo
	// estimates holds the estimate of each of order as the current Apply
	// leaves it; precise says they are translate.Estimate's, not Quick's.
	estimates []int64
	precise   bool

	// observeRebuild, when set (by tests), is told which ExtensionServices
	// each Apply rebuilt or removed, in order.
	observeRebuild func([]source.NamespacedName)
}

// extension is one ExtensionService and what its last build gave.
type extension struct {
	name source.NamespacedName
	// object is nil once the ExtensionService is deleted (it stays
	// reachable only from the dirty set of the Apply that deleted it).
	object *source.ExtensionService
	// built is false until the first build.
	built bool
	// change is why the current Apply rebuilds it.
	change change
	// clusterVersion and claVersion are "" while the ExtensionService is
	// invalid (it has no resources then).
	clusterVersion, claVersion string
	status                     model.Status
	// estimate bounds the output of object as the session holds it:
	// translate.Estimator.Quick's, or translate.Estimate's Bytes when
	// precise.
	estimate int64
	precise  bool
}

// New returns an empty session translating under settings (parsed and
// checked at the API boundary).
func New(settings source.Settings) *Session {
	idx := model.NewIndex(&source.Objects{})
	return &Session{
		settings:              settings,
		index:                 idx,
		translator:            translate.NewIncremental(idx, settings),
		estimator:             translate.NewEstimator(idx, settings),
		extensions:            map[source.NamespacedName]*extension{},
		byTarget:              dependents[source.NamespacedName]{},
		bySecret:              dependents[source.NamespacedName]{},
		byDelegationNamespace: dependents[string]{},
		dirty:                 map[*extension]change{},
	}
}

// Apply applies b and returns what changed in the output. Only the
// ExtensionServices whose output b can affect are rebuilt: those b upserts
// or deletes, those targeting a Service whose Service object or
// EndpointSlices b changes, those whose CA Secret or delegation b changes,
// and, when b changes the client certificate Secret, those that use it.
// Unchanged resources are not in the Changes, even when rebuilt. Every list
// is sorted by name (statuses by namespace, then name), and applying the
// Changes of every Apply in order to an empty output gives exactly what
// translate.Translate gives for the session's current objects.
//
// Apply is all or nothing. It fails, and the session is as it was before,
//   - with a *translate.TooLargeError when the session's whole output (what
//     a full-state answer holds, bounded as translate.Bounded
//     bounds a Translate's) could exceed limits, which it finds before
//     building anything: so every answer of the session, merged deltas
//     included, fits in limits.MaxOutputBytes;
//   - with ctx.Err() once ctx is done, soon after (see Incremental.Rebuild).
//
// Apply keeps a shallow copy of every upserted object: the top-level struct
// is copied (so the session never pins the batch's slices of objects), but
// the slices, maps and pointers inside it (endpoints, labels, certificates,
// ...) are shared. The caller hands those over and must not modify them
// afterwards; the server decodes every request into fresh objects, so this
// costs it nothing and saves copying megabytes of endpoints per batch.
// Deleting an object the session does not hold changes nothing.
func (s *Session) Apply(ctx context.Context, b *Batch, limits translate.Limits) (translate.Changes, error) {
	for _, k := range kindTable[source.KindExtensionService:] {
		k.upsert(s, b.Upserts)
	}
	for _, ref := range b.Deletes {
		kindTable[ref.Kind].delete(s, ref.Name)
	}
	s.takeDirty()
	output, err := s.checkOutput(limits)
	if err != nil {
		s.rollback()
		return translate.Changes{}, err
	}
	d, err := s.rebuildDirty(ctx)
	if err != nil {
		s.rollback()
		return translate.Changes{}, err
	}
	s.output = output
	for i, e := range s.order {
		e.estimate, e.precise = s.estimates[i], s.precise
	}
	s.releaseScratch()
	return d, nil
}

// checkOutput estimates the output of the ExtensionServices in s.order
// into s.estimates, and returns the session's output once they have it, or
// an error when that could exceed limits. It estimates with
// translate.Estimator.Quick, which costs nothing per endpoint, and only
// when that sum is over the limit decides with precise Estimates, so that
// a session near its limit that fits is still accepted.
func (s *Session) checkOutput(limits translate.Limits) (int64, error) {
	s.estimator.Forget()
	s.estimates = slices.Grow(s.estimates[:0], len(s.order))[:len(s.order)]
	s.precise = false
	output := s.estimateOrder(s.estimator.Quick)
	if limits.Fits(output) {
		return output, nil
	}
	s.precise = true
	output = s.estimateOrder(func(es *source.ExtensionService) int64 { return s.estimator.Estimate(es).Bytes })
	// The extensions this Apply leaves alone get precise estimates now, for
	// good: what they read is unchanged, so their estimate holds whether
	// this Apply goes through or is rolled back, and s.output moves with
	// them. Later Applies near the limit then estimate them no more.
	for _, e := range s.extensions {
		if e.precise {
			continue
		}
		if _, inApply := slices.BinarySearchFunc(s.order, e.name, func(o *extension, name source.NamespacedName) int { return o.name.Compare(name) }); inApply {
			continue
		}
		est := s.estimator.Estimate(e.object).Bytes
		s.output += est - e.estimate
		output += est - e.estimate
		e.estimate, e.precise = est, true
	}
	err := limits.Check(output, func() string {
		// Rare, so the session keeps no more than each estimate's total,
		// and the whole session is estimated again to say why.
		var t translate.Tally
		for _, e := range s.extensions {
			est := s.estimator.Estimate(e.object)
			t.Add(e.name, &est)
		}
		return t.Cause(s.settings)
	})
	return output, err
}

// estimateOrder estimates each ExtensionService of s.order with estimate
// into s.estimates (0 for a deleted one), and returns the session's output
// with them.
func (s *Session) estimateOrder(estimate func(*source.ExtensionService) int64) int64 {
	output := s.output
	for i, e := range s.order {
		s.estimates[i] = 0
		if e.object != nil {
			s.estimates[i] = estimate(e.object)
		}
		output += s.estimates[i] - e.estimate
	}
	return output
}

// undo is one change of the current Apply: the object of kind put in place
// of old (nil when it is new), or old deleted (obj nil).
type undo struct {
	kind     source.Kind
	obj, old any
}

// rollback takes back every change of the current Apply, which has not
// updated any extension's output yet: the session is then as it was
// before the Apply.
func (s *Session) rollback() {
	// An ExtensionService deleted is reachable from s.order alone, and gets
	// its extension back, with the output it last reported.
	deleted := map[source.NamespacedName]*extension{}
	for _, e := range s.order {
		if e.object == nil {
			deleted[e.name] = e
		}
	}
	for i := len(s.undo) - 1; i >= 0; i-- {
		u := s.undo[i]
		if u.kind == source.KindExtensionService && u.obj == nil {
			old := u.old.(*source.ExtensionService)
			e := deleted[old.NamespacedName()]
			s.extensions[e.name] = e
			e.object = old
			s.link(e)
			s.counts[source.KindExtensionService]++
			continue
		}
		kindTable[u.kind].revert(s, u)
	}
	// Reverting marked what it touched, all of it dirty already.
	clear(s.dirty)
	s.releaseScratch()
}

func (s *Session) putExtensionService(es *source.ExtensionService) {
	name := es.NamespacedName()
	e := s.extensions[name]
	if e == nil {
		e = &extension{name: name}
		s.extensions[name] = e
	} else {
		s.unlink(e)
	}
	e.object = es
	s.link(e)
	s.dirty[e] |= changeOther
}

// link records in the reverse indexes what e.object reads; unlink forgets it.
// A spec change that retargets an ExtensionService is an unlink of the old
// spec and a link of the new one.
func (s *Session) link(e *extension) {
	r := readsOf(e.object, s.settings)
	for _, t := range r.targets {
		s.byTarget.add(t, e)
	}
	for _, secret := range r.secrets {
		s.bySecret.add(secret, e)
	}
	for _, ns := range r.delegationNamespaces {
		s.byDelegationNamespace.add(ns, e)
	}
}

func (s *Session) unlink(e *extension) {
	r := readsOf(e.object, s.settings)
	for _, t := range r.targets {
		s.byTarget.remove(t, e)
	}
	for _, secret := range r.secrets {
		s.bySecret.remove(secret, e)
	}
	for _, ns := range r.delegationNamespaces {
		s.byDelegationNamespace.remove(ns, e)
	}
}

// markSliceService marks the readers of the Service slice is labelled for.
func (s *Session) markSliceService(slice *source.EndpointSlice) {
	if slice.Service != "" {
		s.markTarget(source.NamespacedName{Namespace: slice.Namespace, Name: slice.Service})
	}
}

// change says why an ExtensionService is rebuilt.
type change uint8

const (
	// changeTargets: a target Service or its EndpointSlices changed. That
	// can change the ExtensionService's validity and endpoints, never its
	// Cluster: nothing a Service or an EndpointSlice holds reaches the
	// Cluster (see envoy.BuildCluster), so a Cluster that existed before
	// is kept as it is rather than built and marshalled again.
	changeTargets change = 1 << iota
	// changeOther: anything else (the ExtensionService itself, a Secret, a
	// delegation), which can change everything.
	changeOther
)

func (s *Session) markSet(set *extensionSet, c change) {
	if set == nil {
		return
	}
	set.each(func(e *extension) { s.dirty[e] |= c })
}

func (s *Session) markTarget(service source.NamespacedName) {
	s.markSet(s.byTarget[service], changeTargets)
}

func (s *Session) markSecret(name source.NamespacedName) {
	if cc := s.settings.ClientCertificate; cc != nil && *cc == name {
		// Every ExtensionService checks the client certificate.
		for _, e := range s.extensions {
			s.dirty[e] |= changeOther
		}
		return
	}
	s.markSet(s.bySecret[name], changeOther)
}

func (s *Session) markDelegationNamespace(namespace string) {
	s.markSet(s.byDelegationNamespace[namespace], changeOther)
}

// deleteExtensionService forgets old, which s holds. The extension stays
// reachable from the dirty set alone, for the rebuild to report its
// removal.
func (s *Session) deleteExtensionService(old *source.ExtensionService) {
	name := old.NamespacedName()
	e := s.extensions[name]
	s.unlink(e)
	delete(s.extensions, name)
	e.object = nil
	s.dirty[e] |= changeOther
}

// smallScratch is the size up to which scratch is kept for the next Apply.
const smallScratch = 64

// takeDirty moves the marked ExtensionServices into s.order, in name
// order so the work (and any parallel split of it) is the same whatever
// order the batch listed things in, noting in each why it is rebuilt.
func (s *Session) takeDirty() {
	s.order = s.order[:0]
	for e, c := range s.dirty {
		e.change = c
		s.order = append(s.order, e)
	}
	if len(s.dirty) > smallScratch {
		// A map keeps its size after clear, and ranging over it costs its
		// size: after a large batch, the next small ones would pay for it.
		s.dirty = map[*extension]change{}
	} else {
		clear(s.dirty)
	}
	if len(s.order) > 1 {
		slices.SortFunc(s.order, func(a, b *extension) int { return a.name.Compare(b.name) })
	}
}

// rebuildDirty rebuilds the ExtensionServices of s.order and returns how
// their output changed. When ctx ends first, it returns ctx.Err() and has
// changed no extension.
func (s *Session) rebuildDirty(ctx context.Context) (translate.Changes, error) {
	var d translate.Changes
	if len(s.order) == 0 {
		return d, nil
	}
	if s.observeRebuild != nil {
		names := make([]source.NamespacedName, len(s.order))
		for i, e := range s.order {
			names[i] = e.name
		}
		s.observeRebuild(names)
	}

	s.rebuild, s.rebuilds = s.rebuild[:0], s.rebuilds[:0]
	for _, e := range s.order {
		if e.object == nil {
			continue
		}
		r := translate.Rebuild{ExtensionService: e.object}
		if e.change == changeTargets && e.claVersion != "" {
			// Only what it targets changed: its Cluster stays as it is,
			// unless it is STRICT_DNS (it alone has no
			// ClusterLoadAssignment), whose targets' names it holds, and
			// which a target turned into a Service with endpoints makes EDS.
			r.KeepCluster = translate.Resource{Name: e.status.ClusterName, Version: e.clusterVersion}
		}
		s.rebuild = append(s.rebuild, e)
		s.rebuilds = append(s.rebuilds, r)
	}
	if err := s.translator.Rebuild(ctx, s.rebuilds, func(i int, o *translate.Outcome) { update(&d, s.rebuild[i], o) }); err != nil {
		return translate.Changes{}, err
	}
	for _, e := range s.order {
		if e.object == nil {
			removeAll(&d, e)
		}
	}
	d.Sort()
	return d, nil
}

// releaseScratch lets go of the objects the current Apply's scratch
// holds, and of the scratch itself after a large batch.
func (s *Session) releaseScratch() {
	clear(s.rebuild)
	clear(s.rebuilds)
	clear(s.order)
	clear(s.undo)
	clear(s.estimates)
	if len(s.order) > smallScratch || len(s.undo) > smallScratch {
		s.order, s.rebuild, s.rebuilds, s.undo, s.estimates = nil, nil, nil, nil, nil
		return
	}
	s.order, s.rebuild, s.rebuilds, s.undo, s.estimates = s.order[:0], s.rebuild[:0], s.rebuilds[:0], s.undo[:0], s.estimates[:0]
}

// removeAll records in d that the deleted e no longer has any output.
func removeAll(d *translate.Changes, e *extension) {
	if !e.built {
		return
	}
	if e.clusterVersion != "" {
		d.RemovedClusters = append(d.RemovedClusters, e.status.ClusterName)
	}
	if e.claVersion != "" {
		d.RemovedClusterLoadAssignments = append(d.RemovedClusterLoadAssignments, e.status.ClusterName)
	}
	d.RemovedStatuses = append(d.RemovedStatuses, e.name)
}

// update records in d how o differs from e's last outcome, and makes o e's
// last outcome.
func update(d *translate.Changes, e *extension, o *translate.Outcome) {
	oldCluster := e.status.ClusterName // the name e's resources were under
	switch {
	case o.Valid() && o.Cluster.Version != e.clusterVersion:
		d.Clusters = append(d.Clusters, o.Cluster)
	case !o.Valid() && e.clusterVersion != "":
		d.RemovedClusters = append(d.RemovedClusters, oldCluster)
	}
	switch {
	case o.HasClusterLoadAssignment() && o.ClusterLoadAssignment.Version != e.claVersion:
		d.ClusterLoadAssignments = append(d.ClusterLoadAssignments, o.ClusterLoadAssignment)
	case !o.HasClusterLoadAssignment() && e.claVersion != "":
		d.RemovedClusterLoadAssignments = append(d.RemovedClusterLoadAssignments, oldCluster)
	}
	if !e.built || !e.status.Equal(&o.Status) {
		d.Statuses = append(d.Statuses, o.Status)
	}
	e.built = true
	e.clusterVersion, e.claVersion = o.Cluster.Version, o.ClusterLoadAssignment.Version
	e.status = o.Status
}

// State returns the session's complete output as Changes from nothing.
// Since the session keeps no resource bodies, it rebuilds every
// ExtensionService: as costly as a Translate of the session's objects.
// Builds are deterministic, so what it returns has the very versions the
// deltas announced.
func (s *Session) State() translate.Changes {
	all := make([]*source.ExtensionService, 0, len(s.extensions))
	for _, e := range s.extensions {
		all = append(all, e.object)
	}
	slices.SortFunc(all, func(a, b *source.ExtensionService) int { return a.NamespacedName().Compare(b.NamespacedName()) })
	res := s.translator.All(all)
	d := translate.Changes{Clusters: res.Clusters, ClusterLoadAssignments: res.ClusterLoadAssignments, Statuses: res.Statuses}
	d.Sort()
	return d
}
