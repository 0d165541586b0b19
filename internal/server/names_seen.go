package server

import (
	"hash/maphash"

	"github.com/tributary-dev/tributary/internal/source"
)

// namesSeen records the namespace/name of every object of one kind a
// decoder has checked, and where the first object of each name is, so a
// second object of the same name can be reported with the first's index.
//
// It is keyed by a 64-bit hash of the name rather than by the name: a
// Translate request of 50,000 objects made a map entry of two strings and
// an int per object, 3.7 MB of the 26 MB its decoding allocated, and
// hashing the two strings once is all a lookup costs. A hash is only a
// candidate: the name it stands for is read back from the object it
// points at (nameAt), and a name whose hash an earlier, different name
// took goes into an exact map, so two names are never taken for one.
type namesSeen struct {
	seed maphash.Seed
	// hash is maphash over seed; a test makes every name collide.
	hash func(seed maphash.Seed, key source.NamespacedName) uint64
	// byHash holds, per hash, the first object of a name of that hash.
	byHash map[uint64]seenObject
	// collided holds the first object of each name whose hash an earlier
	// name took; nil until one does.
	collided map[source.NamespacedName]seenObject
	// nameAt returns the name of the object at position of the decoder's
	// list of this kind.
	nameAt func(position int32) source.NamespacedName
}

// seenObject is where an object is: index in the client's list, position
// in the decoder's list of its kind. Both fit 32 bits: a message is under
// 4 GiB (gRPC's length prefix) and an object takes two bytes of it at
// least.
type seenObject struct {
	index, position int32
}

func newNamesSeen(n int, nameAt func(position int32) source.NamespacedName) *namesSeen {
	return &namesSeen{
		seed:   maphash.MakeSeed(),
		hash:   maphash.Comparable[source.NamespacedName],
		byHash: make(map[uint64]seenObject, n),
		nameAt: nameAt,
	}
}

// add records the object of name key at index in the client's list and
// position in the decoder's list of its kind, unless an object of that
// name was recorded before: it then returns that object's index and true.
func (s *namesSeen) add(key source.NamespacedName, index, position int) (first int, dup bool) {
	h := s.hash(s.seed, key)
	o, taken := s.byHash[h]
	if !taken {
		s.byHash[h] = seenObject{index: int32(index), position: int32(position)}
		return 0, false
	}
	if s.nameAt(o.position) == key {
		return int(o.index), true
	}
	if o, dup := s.collided[key]; dup {
		return int(o.index), true
	}
	if s.collided == nil {
		s.collided = make(map[source.NamespacedName]seenObject)
	}
	s.collided[key] = seenObject{index: int32(index), position: int32(position)}
	return 0, false
}

// find returns the index of the object of name key, if one was recorded.
func (s *namesSeen) find(key source.NamespacedName) (index int, found bool) {
	o, taken := s.byHash[s.hash(s.seed, key)]
	if !taken {
		return 0, false
	}
	if s.nameAt(o.position) == key {
		return int(o.index), true
	}
	o, found = s.collided[key]
	return int(o.index), found
}
