package connreq

import (
	"errors"
	"net"
	"testing"

	"github.com/godat/godat/api"
)

type testEP struct{ api.EP }

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
