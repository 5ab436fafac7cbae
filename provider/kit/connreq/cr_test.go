package connreq

import (
	"errors"
	"net"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/provider/kit/epattr"
)

type testEP struct {
	api.EP
	epattr.Endpoint
}

func TestCR(t *testing.T) {
	var c CR[*testEP]
	if c.HandleType() != api.HandleCR {
		t.Fatalf("HandleType = %v", c.HandleType())
	}
	addr, pd := &net.IPAddr{IP: net.IPv4(192, 0, 2, 1)}, []byte("hello")
	prm, err := c.Param(addr, 7, pd)
	if err != nil || prm.RemoteAddr != addr || prm.RemotePortQual != 7 || string(prm.PrivateData) != "hello" || prm.LocalEP != nil {
		t.Fatalf("Param without a reserved EP = %+v, %v (LocalEP must be a nil interface)", prm, err)
	}
	p := &testEP{}
	c.Local = p
	if prm, _ := c.Param(addr, 7, pd); prm.LocalEP != api.EP(p) {
		t.Fatalf("Param with a reserved EP names %v", prm.LocalEP)
	}
	if got := c.TakeLocal(); got != p || c.Local != nil {
		t.Fatalf("TakeLocal = %v, leaving %v", got, c.Local)
	}
	if got := c.TakeLocal(); got != nil {
		t.Fatalf("a second TakeLocal = %v", got)
	}
	c.Done = true
	if _, err := c.Param(addr, 7, pd); !errors.Is(err, api.ErrInvalidHandle) || err != ErrCRDone {
		t.Fatalf("Param of a done CR: %v", err)
	}
}

// TestCRAccepting checks that Accepting changes nothing on a refusal and
// on success leaves the request done and the EP the consumer's, in
// COMPLETION_PENDING.
func TestCRAccepting(t *testing.T) {
	own := &testEP{Endpoint: epattr.Endpoint{State: api.EPTentativeConnectionPending, ProviderOwned: true}}
	other := &testEP{Endpoint: epattr.Endpoint{State: api.EPUnconnected}}
	c := CR[*testEP]{Local: own}
	if _, err := c.Accepting(other, false); !errors.Is(err, api.ErrInvalidParameter) || c.Done || c.Local != own {
		t.Fatalf("another EP for a request with its own: %v, done %v", err, c.Done)
	}
	own.State = api.EPDisconnected
	if _, err := c.Accepting(nil, false); !errors.Is(err, api.ErrInvalidState) || c.Done || c.Local != own || !own.ProviderOwned {
		t.Fatalf("own EP in the wrong state: %v, done %v", err, c.Done)
	}
	own.State = api.EPTentativeConnectionPending
	p, err := c.Accepting(nil, false)
	if err != nil || p != own || !c.Done || c.Local != nil || own.ProviderOwned || own.State != api.EPCompletionPending {
		t.Fatalf("Accepting = %v, %v; done %v, local %v, provider-owned %v, %s", p, err, c.Done, c.Local, own.ProviderOwned, own.State)
	}
	if _, err := c.Accepting(other, false); err != ErrCRDone || other.State != api.EPUnconnected {
		t.Fatalf("a done request: %v", err)
	}
	c = CR[*testEP]{}
	if p, err := c.Accepting(other, false); err != nil || p != other || other.State != api.EPCompletionPending {
		t.Fatalf("the consumer's EP: %v, %v, %s", p, err, other.State)
	}
}

// TestCRReleaseLocal checks the three ends of a reserved EP that is not
// accepted on: back to UNCONNECTED, handed to the provider to destroy,
// left alone once freed.
func TestCRReleaseLocal(t *testing.T) {
	rsps := &testEP{Endpoint: epattr.Endpoint{State: api.EPPassiveConnectionPending}}
	c := CR[*testEP]{Local: rsps}
	if p := c.ReleaseLocal(); p != nil || c.Local != nil || rsps.State != api.EPUnconnected {
		t.Fatalf("an RSP's EP: returned %v, local %v, %s", p, c.Local, rsps.State)
	}
	made := &testEP{Endpoint: epattr.Endpoint{State: api.EPTentativeConnectionPending, ProviderOwned: true}}
	c.Local = made
	if p := c.ReleaseLocal(); p != made || c.Local != nil {
		t.Fatalf("a provider's EP: returned %v, local %v", p, c.Local)
	}
	made.Freed = true
	c.Local = made
	if p := c.ReleaseLocal(); p != nil || c.Local != nil {
		t.Fatalf("a freed EP: returned %v, local %v", p, c.Local)
	}
	if p := c.ReleaseLocal(); p != nil {
		t.Fatalf("no reserved EP: returned %v", p)
	}
}

// Finish marks the request done and gives back its EP as ReleaseLocal
// does: an RSP's EP is UNCONNECTED again, a provider-made one is returned
// for destruction.
func TestCRFinish(t *testing.T) {
	p := &testEP{}
	p.State = api.EPPassiveConnectionPending
	c := CR[*testEP]{Local: p}
	if got := c.Finish(); got != nil || !c.Done || c.Local != nil || p.State != api.EPUnconnected {
		t.Fatalf("Finish of an RSP's request = %v, done %v, local %v, EP %v", got, c.Done, c.Local, p.State)
	}
	q := &testEP{}
	q.State, q.ProviderOwned = api.EPPassiveConnectionPending, true
	c = CR[*testEP]{Local: q}
	if got := c.Finish(); got != q || !c.Done {
		t.Fatalf("Finish of a request with a provider-made EP = %v, done %v", got, c.Done)
	}
}

// An RSP reports its EP until that EP is freed, and its free returns the
// EP to UNCONNECTED only while no request has taken it.
func TestRSP(t *testing.T) {
	p := &testEP{}
	p.State = api.EPReserved
	r := RSP[*testEP]{EP: p}
	if r.HandleType() != api.HandleRSP {
		t.Fatalf("HandleType = %v", r.HandleType())
	}
	prm := r.Param(nil, 9, nil)
	if prm.ConnQual != 9 || prm.EP != api.EP(p) {
		t.Fatalf("Param = %+v", prm)
	}
	p.Freed = true
	if prm := r.Param(nil, 9, nil); prm.EP != nil {
		t.Fatalf("Param names a freed EP: %v", prm.EP)
	}
	p.Freed = false

	r.Taken = true // a request took the EP, which another RSP reserved since
	r.Unreserve()
	if p.State != api.EPReserved {
		t.Fatalf("Unreserve after a request took the EP moved it to %v", p.State)
	}
	r.Taken = false
	r.Unreserve()
	if p.State != api.EPUnconnected {
		t.Fatalf("Unreserve of a reserved EP left it %v", p.State)
	}
}
