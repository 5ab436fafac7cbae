package plugin

import (
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/plugin/internal/wire"
)

// A handler's arguments are checked in the order it names them: the first
// bad one is the error, and nothing after it is resolved.
func TestArgsFirstErrorWins(t *testing.T) {
	s := newServer(nil, &serveOptions{}, nil)
	ia := &servedIA{}
	iaID := s.add("ia", api.HandleIA, ia).id
	pz := &fakePZ{}
	pzID := s.add(pz, api.HandlePZ, ia).id

	code := func(err error) uint32 { return api.CodeOf(err) }
	want := func(sub api.Subtype) uint32 { return api.Errorf(api.InvalidHandle, sub, "").Code() }

	a := args{s: s}
	if got, ep := a.ia(0), a.ep(pzID); got != nil || ep != nil || code(a.err) != want(api.SubHandleIA) {
		t.Fatalf("nil IA then a PZ as EP: ia %v, ep %v, err %v; want the IA's error", got, ep, a.err)
	}
	a = args{s: s}
	if got, ep, evd := a.ia(iaID), a.ep(pzID), a.evd(12345); got != ia || ep != nil || evd != nil ||
		code(a.err) != want(wire.HandleSubtype(api.HandleEP)) {
		t.Fatalf("good IA, a PZ as EP, unknown EVD: ia %v, ep %v, evd %v, err %v; want the EP's error", got, ep, evd, a.err)
	}
	a = args{s: s}
	if got, ep, gotPZ := a.ia(iaID), a.ep(0), a.pz(pzID); got != ia || ep != nil || gotPZ != pz || a.err != nil {
		t.Fatalf("good IA, nil EP, good PZ: ia %v, ep %v, pz %v, err %v; want no error", got, ep, gotPZ, a.err)
	}
}

type fakePZ struct{ api.PZ }
