package epattr

import (
	"errors"
	"reflect"
	"testing"

	"github.com/godat/godat/api"
)

// CreateEPs resolves the attributes before the provider's Create, which a
// refused attr never reaches, and passes nil for the SRQ of CreateEP.
func TestCreateEPs(t *testing.T) {
	type call struct {
		pz                     api.PZ
		recv, request, connect api.EVD
		srq                    api.SRQ
		attr                   api.EPAttr
	}
	var got []call
	l := Limits{MaxDTOs: 64, MaxIOV: 8, MaxRDMAReads: 4, MaxMessageSize: 1 << 20, MaxRDMASize: 1 << 20}
	d := Defaults(l, 32, 4, 2)
	c := CreateEPs{Defaults: d, Limits: l, Create: func(pz api.PZ, recv, request, connect api.EVD, srq api.SRQ, attr api.EPAttr) (api.EP, error) {
		got = append(got, call{pz, recv, request, connect, srq, attr})
		return nil, errors.New("made")
	}}
	z, srq := &testPZ{}, &testSRQ{}
	e1, e2, e3 := &testEVD{}, &testEVD{}, &testEVD{}
	if _, err := c.CreateEP(z, e1, e2, e3, nil); err == nil || len(got) != 1 || !reflect.DeepEqual(got[0], call{z, e1, e2, e3, nil, d}) {
		t.Fatalf("CreateEP with a nil attr passed %+v, %v", got, err)
	}
	given := api.EPAttr{MaxMessageSize: 4096}
	want, err := Resolve(&given, d, l) // the given size, the rest from d
	if err != nil || want.MaxMessageSize != 4096 {
		t.Fatalf("Resolve = %+v, %v", want, err)
	}
	if _, err := c.CreateEPWithSRQ(z, e1, e2, e3, srq, &given); err == nil || len(got) != 2 || !reflect.DeepEqual(got[1], call{z, e1, e2, e3, srq, want}) {
		t.Fatalf("CreateEPWithSRQ passed %+v, %v", got, err)
	}
	tooBig := api.EPAttr{MaxMessageSize: 2 << 20}
	if _, err := c.CreateEP(z, e1, e2, e3, &tooBig); err == nil || len(got) != 2 {
		t.Fatalf("an attr past the limits: %v, and Create ran %d times", err, len(got))
	}
}
