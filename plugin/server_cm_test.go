package plugin

import (
	"context"
	"testing"

	"github.com/godat/godat/api"
	pb "github.com/godat/godat/plugin/proto"
)

// rejectingCR is a provider's CR that records how it was ended; with
// refuser set it also answers Refuse (provider.CRRefuser).
type rejectingCR struct {
	api.CR
	ended string
}

func (c *rejectingCR) Query() (api.CRParam, error) { return api.CRParam{}, nil }
func (c *rejectingCR) Reject([]byte) error         { c.ended = "Reject"; return nil }

type refusingCR struct{ rejectingCR }

func (c *refusingCR) Refuse() error { c.ended = "Refuse"; return nil }

// The host's refusal (a Reject with refuse set) reaches a CR's Refuse
// when it has one, and its Reject otherwise; a consumer's Reject is
// always a Reject.
func TestRejectOrRefuse(t *testing.T) {
	for _, tc := range []struct {
		name   string
		refuse bool
		cr     interface{ endedBy() string }
		want   string
	}{
		{"refused, with Refuse", true, &refusingCR{}, "Refuse"},
		{"refused, without Refuse", true, &rejectingCR{}, "Reject"},
		{"rejected, with Refuse", false, &refusingCR{}, "Reject"},
	} {
		s := newServer(nil, &serveOptions{}, nil)
		id := s.add(tc.cr, api.HandleCR, &servedIA{}).id
		r, err := s.Reject(context.Background(), &pb.CRReq{Cr: id, Refuse: tc.refuse})
		if err != nil || r.Err != nil {
			t.Fatalf("%s: Reject = %v, %v", tc.name, r, err)
		}
		if got := tc.cr.endedBy(); got != tc.want {
			t.Errorf("%s: the CR was ended by %q, want %q", tc.name, got, tc.want)
		}
		if _, err := s.lookup(id, api.HandleCR); err == nil {
			t.Errorf("%s: the CR is still served", tc.name)
		}
	}
}

func (c *rejectingCR) endedBy() string { return c.ended }
