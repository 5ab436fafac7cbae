package registry

// HandleName is the name the trace and the guard's errors give o, an IA
// from Open or one of its objects, for the package's external tests.
func HandleName(o any) string { return o.(guarded).header().name() }
