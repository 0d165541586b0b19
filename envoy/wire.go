package envoy

import "github.com/tributary-dev/tributary/model"

// AppendClusterLoadAssignment appends to dst the wire encoding of
// BuildClusterLoadAssignment(ec), byte for byte what proto.Marshal gives.
func AppendClusterLoadAssignment(dst []byte, ec *model.ExtensionCluster) []byte {
	panic("TODO")
}
