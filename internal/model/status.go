package model

import (
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/tributary-dev/tributary/internal/source"
)

// NamespacedName names the ExtensionService s is the status of.
func (s *Status) NamespacedName() source.NamespacedName {
	return source.NamespacedName{Namespace: s.Namespace, Name: s.Name}
}

// Equal reports whether s and o say the same thing (a nil and an empty list
// of sub-conditions say the same thing).
func (s *Status) Equal(o *Status) bool {
	return s.Namespace == o.Namespace && s.Name == o.Name &&
		s.ClusterName == o.ClusterName && s.ResponseTimeout == o.ResponseTimeout &&
		s.Condition.Type == o.Condition.Type && s.Condition.Status == o.Condition.Status &&
		s.Condition.ObservedGeneration == o.Condition.ObservedGeneration &&
		s.Condition.Reason == o.Condition.Reason && s.Condition.Message == o.Condition.Message &&
		slices.Equal(s.Condition.Errors, o.Condition.Errors) &&
		slices.Equal(s.Condition.Warnings, o.Condition.Warnings) &&
		slices.Equal(s.Availability, o.Availability)
}

// Hash is a 64-bit hash of everything Equal compares, for a holder that
// keeps only what it needs to tell a status changed. Every
// string is length-prefixed, so no two different statuses are hashed from
// the same bytes; equal hashes then mean equal statuses unless xxhash
// collides, which at 64 bits practically never happens.
func (s *Status) Hash() uint64 {
	var h statusHasher
	h.d.Reset() // the zero Digest is not a valid start
	h.str(s.Namespace)
	h.str(s.Name)
	h.str(s.ClusterName)
	h.str(s.ResponseTimeout)
	c := &s.Condition
	h.str(c.Type)
	h.str(c.Status)
	h.uint(uint64(c.ObservedGeneration))
	h.str(c.Reason)
	h.str(c.Message)
	for _, list := range [][]SubCondition{c.Errors, c.Warnings} {
		h.uint(uint64(len(list)))
		for i := range list {
			h.str(list[i].Type)
			h.str(list[i].Status)
			h.str(list[i].Reason)
			h.str(list[i].Message)
		}
	}
	h.uint(uint64(len(s.Availability)))
	for i := range s.Availability {
		a := &s.Availability[i]
		h.str(a.Service)
		h.uint(uint64(a.Port))
		h.uint(uint64(a.ReadyEndpoints))
		h.uint(uint64(a.Weight))
		h.str(a.Reason)
	}
	return h.d.Sum64()
}

type statusHasher struct {
	d   xxhash.Digest
	buf [8]byte
}

func (h *statusHasher) uint(v uint64) {
	binary.LittleEndian.PutUint64(h.buf[:], v)
	_, _ = h.d.Write(h.buf[:])
}

func (h *statusHasher) str(s string) {
	h.uint(uint64(len(s)))
	_, _ = h.d.WriteString(s)
}
