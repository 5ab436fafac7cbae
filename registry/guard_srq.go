package registry

import (
	"fmt"
	"sync/atomic"

	"github.com/godat/godat/api"
)

// The guard of shared receive queues.

// srqGuard guards a shared receive queue.
type srqGuard struct {
	hdr
	p      api.SRQ
	pz     *pzGuard
	maxIOV atomic.Int64
}

func (g *srqGuard) Query() (api.SRQParam, error) {
	return query(&g.hdr, opSRQQuery, g.p.Query, func(p *api.SRQParam) { p.IA = g.ia.asIA(p.IA); p.PZ = asGuard(g.ia, p.PZ) })
}

func (g *srqGuard) PostRecv(iov []api.LMRTriplet, cookie api.Cookie) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opSRQPostRecv, &g.hdr, h.start(opSRQPostRecv), &err)
	}
	if g.freed.Load() {
		return errFreedSRQ
	}
	if int64(len(iov)) > g.maxIOV.Load() {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("%d segments exceed the SRQ limit of %d", len(iov), g.maxIOV.Load()))
	}
	ia := g.ia
	if ia.serial != nil {
		ia.serial.Lock()
		defer ia.serial.Unlock()
	}
	return g.p.PostRecv(iov, cookie)
}

func (g *srqGuard) Resize(n int) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opSRQResize, &g.hdr, h.start(opSRQResize), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if max := g.ia.attr.MaxRecvPerSRQ; n <= 0 || (max > 0 && n > max) {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("SRQ size %d outside 1..%d", n, max))
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.Resize(n)
}

func (g *srqGuard) SetLW(n int) (err error) {
	if h := g.ia.hooks; h != nil {
		defer h.done(opSRQSetLW, &g.hdr, h.start(opSRQSetLW), &err)
	}
	if err := g.live(); err != nil {
		return err
	}
	if n < 0 {
		return api.Errorf(api.InvalidParameter, api.SubArg2, fmt.Sprintf("low watermark %d is negative", n))
	}
	g.ia.enter()
	defer g.ia.leave()
	return g.p.SetLW(n)
}

func (g *srqGuard) Free() error {
	return free(g, opSRQFree, g.p, api.SubStateSRQInUse, g.p.Free, &g.pz.users)
}
