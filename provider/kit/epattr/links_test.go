package epattr

import (
	"testing"

	"github.com/godat/godat/api"
)

type (
	testPZ  struct{ api.PZ }
	testEVD struct{ api.EVD }
	testSRQ struct{ api.SRQ }
)

// Links turns handles into the provider's types and back, with nil
// interfaces, never typed nils, for what the EP lacks.
func TestLinks(t *testing.T) {
	z, r, c := &testPZ{}, &testEVD{}, &testEVD{}
	var l Links[*testPZ, *testEVD, *testSRQ]
	l.Link(z, r, nil, c)
	if l.PZ != z || l.RecvEVD != r || l.RequestEVD != nil || l.ConnectEVD != c || l.SRQ != nil {
		t.Fatalf("Link: %+v", l)
	}
	prm := api.EPParam{RequestEVD: &testEVD{}}
	l.Fill(&prm)
	if prm.PZ != z || prm.RecvEVD != r || prm.RequestEVD != nil || prm.ConnectEVD != c || prm.SRQ != nil {
		t.Fatalf("Fill: %+v", prm)
	}
	q := &testSRQ{}
	l.SRQ = q
	l.Fill(&prm)
	if prm.SRQ != q {
		t.Fatalf("Fill reports SRQ %v, want the EP's", prm.SRQ)
	}
	r2 := &testEVD{}
	l.Apply(api.EPFieldRecvEVD|api.EPFieldPZ, &api.EPParam{RecvEVD: r2, RequestEVD: r2})
	if l.PZ != nil || l.RecvEVD != r2 || l.RequestEVD != nil || l.ConnectEVD != c {
		t.Fatalf("Apply changed what the mask does not select, or missed what it does: %+v", l)
	}
	var none Links[*testPZ, *testEVD, *NoSRQ]
	none.Fill(&prm)
	if prm.SRQ != nil || prm.PZ != nil {
		t.Fatalf("an EP without links reports %+v", prm)
	}
}
