//go:build verbs && !cgo

package verbs

// unavailable is the reason when the tag is given but cgo, which rdma-core
// needs, is off.
func unavailable() string {
	return "built without cgo, which verbs support needs (build with CGO_ENABLED=1 -tags verbs)"
}
