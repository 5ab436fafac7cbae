package host

import "io"

// SetLogOutput sends the host's log of its plugins to w until restore is
// called.
func SetLogOutput(w io.Writer) (restore func()) {
	old := logOutput
	logOutput = w
	return func() { logOutput = old }
}

// SetHashedHook makes f run after a pinned executable has been checked and
// before it is run, until restore is called.
func SetHashedHook(f func()) (restore func()) {
	old := testHookHashed
	testHookHashed = f
	return func() { testHookHashed = old }
}
