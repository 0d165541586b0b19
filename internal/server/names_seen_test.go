package server

import (
	"hash/maphash"
	"testing"

	"github.com/tributary-dev/tributary/internal/source"
)

// TestNamesSeen: a repeated name is found with its first object's index,
// and a name is never taken for another, even when every name hashes
// alike and each one past the first goes to the exact map.
func TestNamesSeen(t *testing.T) {
	for _, tc := range []struct {
		name string
		hash func(maphash.Seed, source.NamespacedName) uint64
	}{
		{"maphash", maphash.Comparable[source.NamespacedName]},
		{"every name collides", func(maphash.Seed, source.NamespacedName) uint64 { return 7 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var listed []source.NamespacedName
			s := newNamesSeen(0, func(position int32) source.NamespacedName { return listed[position] })
			s.hash = tc.hash
			// Client indexes 10, 11, ...: a list's index and position differ.
			add := func(ns, name string) (int, bool) {
				key := source.NamespacedName{Namespace: ns, Name: name}
				first, dup := s.add(key, 10+len(listed), len(listed))
				listed = append(listed, key)
				return first, dup
			}
			for _, step := range []struct {
				ns, name string
				first    int
				dup      bool
			}{
				{"a", "x", 0, false},
				{"a", "y", 0, false},
				{"b", "x", 0, false},
				{"a", "y", 11, true},
				{"b", "x", 12, true},
				{"a", "x", 10, true},
				{"c", "z", 0, false},
				{"c", "z", 16, true},
			} {
				if first, dup := add(step.ns, step.name); first != step.first || dup != step.dup {
					t.Errorf("add %s/%s = %d, %v; want %d, %v", step.ns, step.name, first, dup, step.first, step.dup)
				}
			}
			for _, find := range []struct {
				ns, name string
				index    int
				found    bool
			}{
				{"a", "x", 10, true},
				{"b", "x", 12, true},
				{"c", "z", 16, true},
				{"c", "x", 0, false},
			} {
				if index, found := s.find(source.NamespacedName{Namespace: find.ns, Name: find.name}); index != find.index || found != find.found {
					t.Errorf("find %s/%s = %d, %v; want %d, %v", find.ns, find.name, index, found, find.index, find.found)
				}
			}
		})
	}
}
