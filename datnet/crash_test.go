package datnet_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/datnet"
	"github.com/godat/godat/registry"
)

// When the plugin process serving a stream dies, a blocked Read and
// later Writes fail with an error and Close returns: nothing hangs.
func TestPluginCrashEndsStreams(t *testing.T) {
	cfg, err := registry.ParseConfig("crash.conf", []byte(testConfig+pluginConfig()))
	if err != nil {
		t.Fatal(err)
	}
	r := registry.New(cfg)
	open := func(ctx context.Context) (api.IA, error) { return r.Open(ctx, "plugin") }
	p, err := newPipe(t, open, datnet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	st, ok := r.PluginStatus("lp")
	if !ok || st.PID == 0 {
		t.Fatalf("plugin status %+v", st)
	}

	read := make(chan error, 1)
	go func() {
		_, err := p.c2.Read(make([]byte, 8))
		read <- err
	}()
	time.Sleep(50 * time.Millisecond) // the Read is blocked
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-read:
		if err == nil {
			t.Fatal("Read after the plugin died returned no error")
		}
		t.Logf("Read: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("Read still blocked 20 s after the plugin died")
	}
	var werr error
	for range 100 { // a Write may be posted before the failure is seen
		if _, werr = p.c1.Write([]byte("x")); werr != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if werr == nil {
		t.Fatal("Write after the plugin died kept succeeding")
	}
	closed := make(chan error, 2)
	for _, c := range []interface{ Close() error }{p.c1, p.c2} {
		go func() { closed <- c.Close() }()
	}
	for range 2 {
		select {
		case err := <-closed:
			t.Log("Close:", err)
		case <-time.After(30 * time.Second):
			t.Fatal("Close hangs after the plugin died")
		}
	}
	p.c1, p.c2 = nil, nil
}
