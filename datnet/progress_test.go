package datnet

import (
	"context"
	"testing"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"

	_ "github.com/godat/godat/providers/loopback"
)

// A Read that blocks for a long time costs the event loop no turns: it
// sleeps until the call ends instead of checking on a timer.
func TestBlockedReadCostsNoLoopTurns(t *testing.T) {
	cfg, err := registry.ParseConfig("t.conf", []byte("[[ia]]\nname = \"lo\"\nprovider = \"loopback\"\napi_version = \"u2.0\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(cfg)
	ctx := context.Background()
	ia, err := reg.Open(ctx, "lo")
	if err != nil {
		t.Fatal(err)
	}
	defer ia.Close(api.CloseGraceful)
	l, err := Listen(ia, ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *Conn, 1)
	go func() {
		c, _ := l.Accept()
		accepted <- c.(*Conn)
	}()
	cc, err := Dial(ctx, ia, l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	s := <-accepted
	defer s.Close()

	s.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	turns := make(chan uint64, 1)
	go func() {
		time.Sleep(20 * time.Millisecond) // the Read is blocked by then
		before := s.loops.Load()
		time.Sleep(200 * time.Millisecond)
		turns <- s.loops.Load() - before
	}()
	if _, err := s.Read(make([]byte, 8)); err == nil {
		t.Fatal("Read returned data nobody sent")
	}
	if n := <-turns; n > 2 {
		t.Errorf("the event loop turned %d times while a Read was blocked (a timer of %v would turn it about %d times)", n, standDown, 200*time.Millisecond/standDown)
	}
}

// The spin adapts to how long calls wait: spinTime at first and for
// waits of maxSpin or more, half as long again as short waits, never
// more than maxSpin.
func TestSpinnerLimit(t *testing.T) {
	var s spinner
	if got := s.limit(); got != spinTime {
		t.Errorf("a new spinner spins %v, want %v", got, spinTime)
	}
	for range 100 {
		s.learn(300 * time.Microsecond)
	}
	if got := s.limit(); got < 400*time.Microsecond || got > 460*time.Microsecond {
		t.Errorf("after waits of 300µs the spin is %v, want about 450µs", got)
	}
	for range 100 {
		s.learn(5 * time.Microsecond)
	}
	if got := s.limit(); got != spinTime {
		t.Errorf("after waits of 5µs the spin is %v, want %v", got, spinTime)
	}
	for range 100 {
		s.learn(900 * time.Microsecond)
	}
	if got := s.limit(); got != maxSpin {
		t.Errorf("after waits of 900µs the spin is %v, want %v", got, maxSpin)
	}
	for range 100 {
		s.learn(time.Hour)
	}
	if got := s.limit(); got != spinTime {
		t.Errorf("after waits of an hour the spin is %v, want %v", got, spinTime)
	}
	for range 30 {
		s.learn(300 * time.Microsecond)
	}
	if got := s.limit(); got == spinTime {
		t.Errorf("30 waits of 300µs after long ones still spin only %v", got)
	}
}
