package plugin

import (
	"context"

	"github.com/godat/godat/api"
	pb "github.com/godat/godat/plugin/proto"
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
	o, err := s.lookup(r.Cr, api.HandleCR)
	if err != nil {
		return s.result(err)
	}
	ep, err := s.epArg(r.Ep)
	if err != nil {
		return s.result(err)
	}
	if err := o.obj.(api.CR).Accept(ep, r.PrivateData); err != nil {
		return s.result(err)
	}
	s.remove(o)
	return s.result(nil)
}

func (s *server) Reject(_ context.Context, r *pb.CRReq) (*pb.Result, error) {
	o, err := s.lookup(r.Cr, api.HandleCR)
	if err != nil {
		return s.result(err)
	}
	cr := o.obj.(api.CR)
	local := s.crLocalEP(cr)
	if err := cr.Reject(r.PrivateData); err != nil {
		return s.result(err)
	}
	s.crDone(o, local)
	return s.result(nil)
}

func (s *server) Handoff(_ context.Context, r *pb.CRReq) (*pb.Result, error) {
	o, err := s.lookup(r.Cr, api.HandleCR)
	if err != nil {
		return s.result(err)
	}
	cr := o.obj.(api.CR)
	local := s.crLocalEP(cr)
	if err := cr.Handoff(api.ConnQual(r.ConnQual)); err != nil {
		return s.result(err)
	}
	s.crDone(o, local)
	return s.result(nil)
}
