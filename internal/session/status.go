package session

import (
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"

	"github.com/tributary-dev/tributary/internal/model"
)

// statusEqual reports whether two statuses say the same thing (a nil and an
// empty list of sub-conditions say the same thing).
func statusEqual(a, b *model.Status) bool {
	return a.Namespace == b.Namespace && a.Name == b.Name &&
		a.ClusterName == b.ClusterName && a.ResponseTimeout == b.ResponseTimeout &&
		a.Condition.Type == b.Condition.Type && a.Condition.Status == b.Condition.Status &&
		a.Condition.ObservedGeneration == b.Condition.ObservedGeneration &&
		a.Condition.Reason == b.Condition.Reason && a.Condition.Message == b.Condition.Message &&
		slices.Equal(a.Condition.Errors, b.Condition.Errors) &&
		slices.Equal(a.Condition.Warnings, b.Condition.Warnings)
}

// statusHash is a 64-bit hash of everything statusEqual compares. Every
// string is length-prefixed, so no two different statuses are hashed from
// the same bytes; equal hashes then mean equal statuses unless xxhash
// collides, which at 64 bits practically never happens.
func statusHash(st *model.Status) uint64 {
	var h statusHasher
	h.d.Reset() // the zero Digest is not a valid start
	h.str(st.Namespace)
	h.str(st.Name)
	h.str(st.ClusterName)
	h.str(st.ResponseTimeout)
	c := &st.Condition
	h.str(c.Type)
	h.str(c.Status)
	h.uint(uint64(c.ObservedGeneration))
	h.str(c.Reason)
	h.str(c.Message)
	for _, list := range [][]model.SubCondition{c.Errors, c.Warnings} {
		h.uint(uint64(len(list)))
		for i := range list {
			h.str(list[i].Type)
			h.str(list[i].Status)
			h.str(list[i].Reason)
			h.str(list[i].Message)
		}
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
