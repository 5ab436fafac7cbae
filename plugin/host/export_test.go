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

// SetPostByCall makes the plugins started until restore is called post
// every DTO by a call rather than through the submission ring.
func SetPostByCall() (restore func()) {
	old := testPostByCall.Swap(true)
	return func() { testPostByCall.Store(old) }
}
