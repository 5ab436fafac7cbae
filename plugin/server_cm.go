package plugin

import (
	"context"

	"github.com/godat/godat/api"
	pb "github.com/godat/godat/plugin/proto"
	"github.com/godat/godat/provider"
)

// crDone forgets a CR that was accepted, rejected or handed off, and the
// provider-made EP that a reject or handoff returned to the provider.
func (s *server) crDone(o *servedObj, localEP api.EP) {
	s.remove(o)
	if localEP == nil {
		return
	}
	s.mu.Lock()
	id, ok := s.ids[localEP]
	e := s.objs[id]
	s.mu.Unlock()
	if ok && e != nil && e.made {
		s.remove(e)
	}
}

func (s *server) crLocalEP(cr api.CR) api.EP {
	p, err := cr.Query()
	if err != nil {
		return nil
	}
	return p.LocalEP
}

func (s *server) Accept(_ context.Context, r *pb.CRReq) (*pb.Result, error) {
	a := args{s: s}
	o, ep := a.obj(r.Cr, api.HandleCR), a.ep(r.Ep)
	if a.err != nil {
		return s.result(a.err)
	}
	if err := o.obj.(api.CR).Accept(ep, r.PrivateData); err != nil {
		return s.result(err)
	}
	s.remove(o)
	return s.result(nil)
}

// Reject rejects the request, or refuses it as the provider when the
// host asks and the provider can (provider.CRRefuser).
func (s *server) Reject(_ context.Context, r *pb.CRReq) (*pb.Result, error) {
	return s.endCR(r.Cr, func(cr api.CR) error {
		if rf, ok := cr.(provider.CRRefuser); ok && r.Refuse {
			return rf.Refuse()
		}
		return cr.Reject(r.PrivateData)
	})
}

func (s *server) Handoff(_ context.Context, r *pb.CRReq) (*pb.Result, error) {
	return s.endCR(r.Cr, func(cr api.CR) error { return cr.Handoff(api.ConnQual(r.ConnQual)) })
}

// endCR answers a call that gives the CR id names back to the provider
// (a reject or a handoff), done by end, and forgets the CR.
func (s *server) endCR(id uint64, end func(api.CR) error) (*pb.Result, error) {
	o, err := s.lookup(id, api.HandleCR)
	if err != nil {
		return s.result(err)
	}
	cr := o.obj.(api.CR)
	local := s.crLocalEP(cr)
	if err := end(cr); err != nil {
		return s.result(err)
	}
	s.crDone(o, local)
	return s.result(nil)
}
