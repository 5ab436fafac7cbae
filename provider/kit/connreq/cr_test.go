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
