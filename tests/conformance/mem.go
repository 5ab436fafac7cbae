package conformance

import (
	"bytes"
	"encoding/binary"

	"github.com/godat/godat/api"
)

const rmrRW = api.MemPrivRemoteRead | api.MemPrivRemoteWrite

// rdmaWrite writes data from a fresh client buffer through rt and waits for
// success.
func (t *checkT) rdmaWrite(p *pair, rt api.RMRTriplet, data []byte, cookie api.Cookie) {
	t.T.Helper()
	src := p.cli.region(len(data), rw)
	copy(src.b, data)
	t.noErr(p.cli.ep.PostRDMAWrite(src.iov(0, len(data)), cookie, rt, api.CompletionDefault), "PostRDMAWrite")
	p.cli.expectReq(cookie, api.DTOSuccess, "the RDMA write")
}

// rdmaRead reads n bytes through rt into a fresh client buffer.
func (t *checkT) rdmaRead(p *pair, rt api.RMRTriplet, n int, cookie api.Cookie) []byte {
	t.T.Helper()
	dst := p.cli.region(n, rw)
	t.noErr(p.cli.ep.PostRDMARead(dst.iov(0, n), cookie, rt, api.CompletionDefault), "PostRDMARead")
	p.cli.expectReq(cookie, api.DTOSuccess, "the RDMA read")
	return bytes.Clone(dst.b[:n])
}

// writeFault is remoteFault for an RDMA write of 16 bytes through rt.
func (t *checkT) writeFault(p *pair, target *region, rt api.RMRTriplet) {
	t.T.Helper()
	src := p.cli.region(16, rw)
	src.fill(0, 16, 0xE1)
	rt.Length = 16
	t.remoteFault(p, target, func(c api.Cookie) error {
		return p.cli.ep.PostRDMAWrite(src.iov(0, 16), c, rt, api.CompletionDefault)
	})
}

// sendCarries sends iov from p's client into a 64-byte receive on p's
// server (what says where the bytes come from) and checks that the message
// is want.
func (t *checkT) sendCarries(p *pair, iov []api.LMRTriplet, want []byte, what string) {
	t.T.Helper()
	rr := p.srv.region(64, rw)
	p.srv.postRecv(rr, 0, 64, 1)
	t.noErr(p.cli.ep.PostSend(iov, 2, api.CompletionDefault), "PostSend "+what)
	p.cli.expectReq(2, api.DTOSuccess, "the send")
	p.srv.expectRecv(1, api.DTOSuccess, "the receive")
	if !bytes.Equal(rr.b[:len(want)], want) {
		t.Fatalf("the send %s carried other bytes", what)
	}
}

// bindWith binds a new RMR over a new 64-byte region with remote
// privileges on e's EP with cookie (what names the call) and waits for the
// bind's completion with status st.
func (e *end) bindWith(cookie api.Cookie, st api.DTOStatus, what string) {
	e.t.T.Helper()
	r := e.region(64, remote)
	rmr := e.newRMR()
	_, err := rmr.Bind(r.lmr, r.tr(0, 64), rmrRW, api.VATypeVA, e.ep, cookie, api.CompletionDefault)
	e.t.noErr(err, what)
	e.expectBind(rmr, cookie, st, "the completion of "+what)
}

// noCrossPZBind binds rmr over the whole of r on e's EP, where the three
// are not all in one PZ (what says which differs): the bind is refused, or
// its completion is not a success (dat_rmr_bind(3DAT) RETURN VALUES).
func (t *checkT) noCrossPZBind(e *end, rmr api.RMR, r *region, what string) {
	t.T.Helper()
	_, err := rmr.Bind(r.lmr, r.tr(0, 64), rmrRW, api.VATypeVA, e.ep, 0x33, api.CompletionDefault)
	if err != nil {
		t.wantOneOf(err, "the bind of "+what, api.ErrProtectionViolation, api.ErrInvalidParameter, api.ErrInvalidHandle)
		return
	}
	ev := t.wait(e.req, "the completion of the bind of "+what)
	if (ev.Number == api.RMRBindCompletionEvent && ev.RMRBind.Status == api.DTOSuccess) ||
		(ev.Number == api.DTOCompletionEvent && ev.DTO.Status == api.DTOSuccess) {
		t.Fatalf("the bind of %s succeeded (%s)", what, describe(&ev))
	}
}

var memGroups = []group{
	{page: "dat_rmr_bind", checks: []check{
		{"DESCRIPTION", "the bind completes with its cookie on the request EVD of the EP it was posted on", func(t *checkT) {
			p := t.pair()
			p.srv.bindWith(0x77, api.DTOSuccess, "RMR.Bind")
		}},
		{"DESCRIPTION", "the bound window grants remote write and read inside it and nothing outside changes", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(512, remote)
			snap := r.snapshot()
			_, rt := p.srv.bind(r, 64, 128, rmrRW)
			data := pattern(128, 0x4F)
			t.rdmaWrite(p, rt, data, 1)
			if !bytes.Equal(r.b[64:192], data) {
				t.Fatalf("the window does not hold the written bytes")
			}
			copy(snap[r.page+64:], data)
			r.unchanged(snap, "bytes of the LMR outside the window")
			if got := t.rdmaRead(p, rt, 128, 2); !bytes.Equal(got, data) {
				t.Fatalf("reading the window back gave other bytes")
			}
		}},
		{"DESCRIPTION", "a rebind returns a new context and the old one fails at once (REMOTE_ACCESS, BROKEN, no byte changes)", func(t *checkT) {
			p := t.pair()
			r, rmr, old := p.srv.window(64, 0, 64)
			nw := p.srv.rebind(rmr, r, 0, 64, rmrRW)
			if nw.RMRContext == old.RMRContext {
				t.Fatalf("the rebind returned the same RMR context %#x", old.RMRContext)
			}
			t.rdmaWrite(p, nw, pattern(16, 1), 1)
			t.writeFault(p, r, old)
		}},
		{"DESCRIPTION", "RMR contexts differ across binds and across RMRs", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(64, remote)
			seen := map[api.RMRContext]bool{r.p.RMRContext: true}
			for range 3 {
				rmr, rt := p.srv.bind(r, 0, 64, rmrRW)
				ctxs := []api.RMRContext{rt.RMRContext}
				for range 2 {
					ctxs = append(ctxs, p.srv.rebind(rmr, r, 0, 64, rmrRW).RMRContext)
				}
				for _, c := range ctxs {
					if seen[c] {
						t.Fatalf("RMR context %#x handed out twice (or equal to the LMR's)", c)
					}
					seen[c] = true
				}
			}
		}},
		{"DESCRIPTION", "binding a zero-length triplet unbinds: the context fails (REMOTE_ACCESS, BROKEN, no byte changes)", func(t *checkT) {
			p := t.pair()
			r, rmr, rt := p.srv.window(64, 0, 64)
			p.srv.unbind(rmr, r)
			t.writeFault(p, r, rt)
		}},
		{"DESCRIPTION", "the bind fences later DTOs: a Send carrying the context, posted right after the bind, lets the peer use it at once", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(64, remote)
			rr := p.cli.region(8, rw)
			p.cli.postRecv(rr, 0, 8, 1)
			rmr := p.srv.newRMR()
			ctx, err := rmr.Bind(r.lmr, r.tr(0, 64), rmrRW, api.VATypeVA, p.srv.ep, 0xF0, api.CompletionDefault)
			t.noErr(err, "RMR.Bind")
			msg := p.srv.region(8, rw)
			binary.LittleEndian.PutUint32(msg.b, uint32(ctx))
			p.srv.postSend(msg, 0, 4, 0xF1) // no wait for the bind completion
			p.cli.expectRecv(1, api.DTOSuccess, "the context message")
			got := api.RMRContext(binary.LittleEndian.Uint32(rr.b))
			data := pattern(32, 0x2E)
			t.rdmaWrite(p, api.RMRTriplet{Addr: r.addr(0), Length: 32, RMRContext: got}, data, 2)
			if !bytes.Equal(r.b[:32], data) {
				t.Fatalf("the write through the just-bound context did not land")
			}
			p.srv.expectBind(rmr, 0xF0, api.DTOSuccess, "the bind completion, before the send's")
			p.srv.expectReq(0xF1, api.DTOSuccess, "the send completion, after the bind's")
		}},
		{"PARAMETERS", "a window bound with remote read only refuses an RDMA write (REMOTE_ACCESS, BROKEN, no byte changes)", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(64, remote)
			_, rt := p.srv.bind(r, 0, 64, api.MemPrivRemoteRead)
			t.writeFault(p, r, rt)
		}},
		{"DESCRIPTION", "access outside the window but inside the LMR fails (REMOTE_ACCESS, BROKEN, no byte changes)", func(t *checkT) {
			p := t.pair()
			t.skipForDeviation(p.srv.node, DeviationRMRWindowBounds)
			r, _, rt := p.srv.window(256, 64, 64)
			rt.Addr = r.addr(120) // 8 bytes inside, 8 bytes past the window
			t.writeFault(p, r, rt)
		}},
		{"DESCRIPTION", "access reaching one byte past the window but inside the LMR fails (REMOTE_ACCESS, BROKEN, no byte changes)", func(t *checkT) {
			p := t.pair()
			t.skipForDeviation(p.srv.node, DeviationRMRWindowBounds)
			r, _, rt := p.srv.window(256, 64, 64)
			src := p.cli.region(17, rw)
			src.fill(0, 17, 0xE2)
			rt.Addr, rt.Length = r.addr(112), 17 // the last 16 bytes of the window and one more
			t.remoteFault(p, r, func(c api.Cookie) error {
				return p.cli.ep.PostRDMAWrite(src.iov(0, 17), c, rt, api.CompletionDefault)
			})
		}},
		{"RETURN VALUES", "a triplet outside the LMR is DAT_INVALID_PARAMETER", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(64, remote)
			rmr := p.srv.newRMR()
			_, err := rmr.Bind(r.lmr, r.tr(len(r.b)-8, 16), rmrRW, api.VATypeVA, p.srv.ep, 1, api.CompletionDefault)
			t.wantErr(err, api.ErrInvalidParameter, "Bind over a triplet running past the LMR")
			t.works(p.cli, p.srv, "after the refused bind")
		}},
		{"RETURN VALUES", "a triplet whose lmr_context names another LMR than the LMR handle is DAT_INVALID_PARAMETER", func(t *checkT) {
			p := t.pair()
			a, b := p.srv.region(64, remote), p.srv.region(64, remote)
			rmr := p.srv.newRMR()
			tr := a.tr(0, 64) // a's memory, b's context
			tr.LMRContext = b.p.LMRContext
			_, err := rmr.Bind(a.lmr, tr, rmrRW, api.VATypeVA, p.srv.ep, 1, api.CompletionDefault)
			t.wantErr(err, api.ErrInvalidParameter, "Bind of an LMR with a triplet naming another LMR")
			t.works(p.cli, p.srv, "after the refused bind")
		}},
		{"PARAMETERS", "remote write on a window of an LMR without local write, or remote read without local read, is DAT_PRIVILEGES_VIOLATION", func(t *checkT) {
			p := t.pair()
			for _, c := range []struct {
				lmr, rmr api.MemPriv
				what     string
			}{
				{api.MemPrivLocalRead | api.MemPrivRemoteRead, api.MemPrivRemoteWrite, "remote write on an LMR with local and remote read only"},
				{api.MemPrivLocalWrite | api.MemPrivRemoteWrite, api.MemPrivRemoteRead, "remote read on an LMR with local and remote write only"},
			} {
				r := p.srv.region(64, c.lmr)
				rmr := p.srv.newRMR()
				_, err := rmr.Bind(r.lmr, r.tr(0, 64), c.rmr, api.VATypeVA, p.srv.ep, 1, api.CompletionDefault)
				if why, ok := p.srv.deviation(DeviationBindPrivileges); ok {
					t.Logf("%s: the bind may succeed: the provider declares deviation %q: %s", t.ref, DeviationBindPrivileges, why)
					if err == nil {
						p.srv.expectBind(rmr, 1, api.DTOSuccess, "the bind completion")
						continue
					}
				}
				t.wantErr(err, api.ErrPrivilegesViolation, "Bind granting "+c.what)
				t.works(p.cli, p.srv, "after the refused bind")
			}
		}},
		{"RETURN VALUES", "a bind on an UNCONNECTED EP is DAT_INVALID_STATE", func(t *checkT) {
			n := t.node()
			e := n.end(nil)
			r := n.region(64, remote)
			rmr := n.newRMR()
			_, err := rmr.Bind(r.lmr, r.tr(0, 64), rmrRW, api.VATypeVA, e.ep, 1, api.CompletionDefault)
			t.wantErr(err, api.ErrInvalidState, "Bind on an UNCONNECTED EP")
		}},
		{"DESCRIPTION", "a bind posted on a DISCONNECTED EP is accepted and flushed at once", func(t *checkT) {
			p := t.disconnectedPair()
			p.cli.bindWith(0x42, api.DTOErrFlushed, "Bind on a DISCONNECTED EP")
		}},
		{"RETURN VALUES", "a nil LMR (with a non-zero length) or a nil EP is DAT_INVALID_HANDLE", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(64, remote)
			rmr := p.srv.newRMR()
			_, err := rmr.Bind(nil, r.tr(0, 64), rmrRW, api.VATypeVA, p.srv.ep, 1, api.CompletionDefault)
			t.wantErr(err, api.ErrInvalidHandle, "Bind with a nil LMR")
			_, err = rmr.Bind(r.lmr, r.tr(0, 64), rmrRW, api.VATypeVA, nil, 1, api.CompletionDefault)
			t.wantErr(err, api.ErrInvalidHandle, "Bind with a nil EP")
		}},
		{"RETURN VALUES", "an LMR of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
			p := t.pair()
			foreign := p.cli.region(64, remote)
			rmr := p.srv.newRMR()
			_, err := rmr.Bind(foreign.lmr, foreign.tr(0, 64), rmrRW, api.VATypeVA, p.srv.ep, 1, api.CompletionDefault)
			t.wantErr(err, api.ErrInvalidHandle, "Bind with an LMR of another IA")
		}},
		{"RETURN VALUES", "an RMR of another PZ than the EP and LMR does not bind", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(64, remote)
			rmr, err := p.srv.newPZ().CreateRMR()
			t.noErr(err, "PZ.CreateRMR in a second PZ")
			t.noCrossPZBind(p.srv, rmr, r, "an RMR of another PZ than the EP and LMR")
		}},
		{"RETURN VALUES", "an EP of another PZ than the RMR, whose LMR is in the RMR's PZ, does not bind", func(t *checkT) {
			p := t.pair()
			pz2 := p.srv.newPZ()
			r := p.srv.regionIn(pz2, 64, remote)
			rmr, err := pz2.CreateRMR()
			t.noErr(err, "PZ.CreateRMR in the second PZ")
			t.noCrossPZBind(p.srv, rmr, r, "an EP of another PZ than the RMR and LMR")
		}},
		{"RETURN VALUES", "an LMR of another PZ than the RMR and the EP does not bind", func(t *checkT) {
			p := t.pair()
			r := p.srv.regionIn(p.srv.newPZ(), 64, remote)
			rmr := p.srv.newRMR()
			t.noCrossPZBind(p.srv, rmr, r, "an LMR of another PZ than the RMR and EP")
		}},
		{"DESCRIPTION (DESIGN §4)", "an RMR context works on the connections its scope allows and on no other", func(t *checkT) {
			x := t.boundOnFirstOfTwo()
			t.rdmaWrite(x.first, x.rt, pattern(16, 3), 1)
			switch x.scope {
			case api.RMRScopeEP:
				t.writeFault(x.second, x.r, x.rt)
			case api.RMRScopePZ:
				data := pattern(16, 4)
				t.rdmaWrite(x.second, x.rt, data, 2)
				if !bytes.Equal(x.r.b[:16], data) {
					t.Fatalf("a PZ-scope RMR context did not work on another connection of the PZ")
				}
			default:
				t.Fatalf("RMR.Query Scope %d, want RMRScopeEP or RMRScopePZ for a bound RMR", x.scope)
			}
		}},
	}},

	{page: "dat_rmr_free", checks: []check{
		{"DESCRIPTION", "freeing a bound RMR invalidates its context (REMOTE_ACCESS, BROKEN, no byte changes)", func(t *checkT) {
			p := t.pair()
			r, rmr, rt := p.srv.window(64, 0, 64)
			t.noErr(rmr.Free(), "RMR.Free of a bound RMR")
			t.writeFault(p, r, rt)
		}},
		{"DESCRIPTION", "every call on a freed RMR is DAT_INVALID_HANDLE", freedRMR},
	}},

	{page: "dat_rmr_query", checks: []check{
		{"DESCRIPTION", "a bound RMR reports its triplet, privileges, context, PZ and IA", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(128, remote)
			rmr, rt := p.srv.bind(r, 32, 64, api.MemPrivRemoteRead)
			rp, err := rmr.Query()
			t.noErr(err, "RMR.Query")
			if rp.LMRTriplet != r.tr(32, 64) {
				t.Errorf("RMR triplet %+v, want %+v", rp.LMRTriplet, r.tr(32, 64))
			}
			if rp.Priv != api.MemPrivRemoteRead {
				t.Errorf("RMR privileges %#x, want %#x", rp.Priv, api.MemPrivRemoteRead)
			}
			if rp.RMRContext != rt.RMRContext {
				t.Errorf("RMR context %#x, the bind returned %#x", rp.RMRContext, rt.RMRContext)
			}
			if rp.PZ != p.srv.pz || rp.IA != p.srv.ia {
				t.Errorf("RMR.Query names another PZ or IA")
			}
		}},
		{"DESCRIPTION", "an unbound RMR reports a zero-length triplet", func(t *checkT) {
			p := t.pair()
			r, rmr, _ := p.srv.window(64, 0, 64)
			p.srv.unbind(rmr, r)
			rp, err := rmr.Query()
			t.noErr(err, "RMR.Query")
			if rp.LMRTriplet.Length != 0 {
				t.Fatalf("an unbound RMR reports a triplet of %d bytes", rp.LMRTriplet.Length)
			}
		}},
	}},

	{page: "dat_lmr_create", checks: []check{
		{"DESCRIPTION", "Query reports the length, PZ, privileges and IA, and the registered range covers the region", func(t *checkT) {
			n := t.node()
			r := n.region(3*4096, rw|api.MemPrivRemoteRead)
			p := r.p
			if p.Length != uint64(len(r.b)) || p.PZ != n.pz || p.Priv != rw|api.MemPrivRemoteRead || p.IA != n.ia || p.VAType != api.VATypeVA {
				t.Errorf("LMR.Query = {length %d, privileges %#x, VA type %d, same PZ %v, same IA %v}, want {%d, %#x, %d, true, true}",
					p.Length, p.Priv, p.VAType, p.PZ == n.pz, p.IA == n.ia, len(r.b), rw|api.MemPrivRemoteRead, api.VATypeVA)
			}
			start, end := api.AddrOf(r.b), api.AddrOf(r.b)+api.VAddr(len(r.b))
			if p.RegisteredAddress > start || p.RegisteredAddress+api.VAddr(p.RegisteredSize) < end {
				t.Errorf("registered range [%#x, +%d) does not cover the region [%#x, %#x)", p.RegisteredAddress, p.RegisteredSize, start, end)
			}
		}},
		{"DESCRIPTION", "different LMRs have different LMR contexts", func(t *checkT) {
			n := t.node()
			seen := map[api.LMRContext]bool{}
			for range 4 {
				r := n.region(64, rw)
				if seen[r.p.LMRContext] {
					t.Fatalf("LMR context %#x handed out twice", r.p.LMRContext)
				}
				seen[r.p.LMRContext] = true
			}
		}},
		{"DESCRIPTION", "an LMR without remote privileges grants no remote access through its rmr_context", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(64, rw)
			t.writeFault(p, r, r.rtr(0, 16))
		}},
		{"DESCRIPTION", "DAT_MEM_TYPE_LMR registers an existing LMR again with its own context, usable for DTOs", func(t *checkT) {
			p := t.pair()
			if p.cli.pattr.LMRMemTypesSupported&api.MemTypeLMR == 0 {
				t.Skipf("the provider does not list DAT_MEM_TYPE_LMR in LMRMemTypesSupported")
			}
			r := p.cli.region(64, rw)
			want := r.fill(0, 32, 0x3C)
			lmr2, err := p.cli.ia.CreateLMR(p.cli.pz, api.Region{Type: api.MemTypeLMR, LMR: r.lmr}, rw, api.VATypeVA)
			t.noErr(err, "IA.CreateLMR(DAT_MEM_TYPE_LMR)")
			lp, err := lmr2.Query()
			t.noErr(err, "LMR.Query")
			if lp.LMRContext == r.p.LMRContext {
				t.Fatalf("the second registration has the same LMR context")
			}
			tr := r.tr(0, 32)
			tr.LMRContext = lp.LMRContext
			t.sendCarries(p, []api.LMRTriplet{tr}, want, "through the second registration")
		}},
		{"DESCRIPTION", "DAT_MEM_TYPE_SHARED_VIRTUAL registers AllocMemory memory usable for DTOs", func(t *checkT) {
			p := t.pair()
			if p.cli.pattr.LMRMemTypesSupported&api.MemTypeSharedVirtual == 0 {
				t.Skipf("the provider does not list DAT_MEM_TYPE_SHARED_VIRTUAL in LMRMemTypesSupported")
			}
			m := t.alloc(4096)
			want := pattern(32, 0x3D)
			copy(m.Bytes(), want)
			lmr, err := p.cli.ia.CreateLMR(p.cli.pz, api.Region{Type: api.MemTypeSharedVirtual, Bytes: m.Bytes()}, rw, api.VATypeVA)
			t.noErr(err, "IA.CreateLMR(DAT_MEM_TYPE_SHARED_VIRTUAL)")
			lp, err := lmr.Query()
			t.noErr(err, "LMR.Query")
			tr := api.LMRTriplet{Addr: api.AddrOf(m.Bytes()), Length: 32, LMRContext: lp.LMRContext}
			t.sendCarries(p, []api.LMRTriplet{tr}, want, "from shared memory")
		}},
		{"DESCRIPTION (DAT 2.0 dat.h)", "a zero-based LMR takes offsets from the region start in its triplets", func(t *checkT) {
			p := t.pair()
			if !p.cli.attr.ZBSupported {
				t.Skipf("the IA does not support zero-based virtual addresses")
			}
			r, err := p.cli.tryRegion(p.cli.pz, 64, rw, api.VATypeZB)
			t.noErr(err, "IA.CreateLMR(VATypeZB)")
			want := r.fill(8, 16, 0x3E)
			t.sendCarries(p, r.iov(8, 16), want, "from offset 8 of a zero-based LMR")
		}},
		{"RETURN VALUES", "a nil PZ is DAT_INVALID_HANDLE", func(t *checkT) {
			n := t.node()
			_, err := n.tryRegion(nil, 64, rw, api.VATypeVA)
			t.wantErr(err, api.ErrInvalidHandle, "CreateLMR with a nil PZ")
		}},
		{"RETURN VALUES", "a PZ of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
			a, b := t.node(), t.node()
			_, err := a.tryRegion(b.pz, 64, rw, api.VATypeVA)
			t.wantErr(err, api.ErrInvalidHandle, "CreateLMR with a PZ of another IA")
		}},
		{"RETURN VALUES", "an empty region is DAT_INVALID_PARAMETER", func(t *checkT) {
			n := t.node()
			_, err := n.ia.CreateLMR(n.pz, api.Region{Type: api.MemTypeVirtual}, rw, api.VATypeVA)
			t.wantErr(err, api.ErrInvalidParameter, "CreateLMR of an empty region")
		}},
	}},

	{page: "dat_lmr_free", checks: []check{
		{"DESCRIPTION", "an LMR with a bound RMR cannot be freed (DAT_INVALID_STATE_LMR_IN_USE) until the RMR is freed", func(t *checkT) {
			p := t.pair()
			r, rmr, rt := p.srv.window(64, 0, 64)
			t.wantErr(r.lmr.Free(), sub(api.InvalidState, api.SubStateLMRInUse), "LMR.Free with a bound RMR")
			t.rdmaWrite(p, rt, pattern(8, 1), 1) // the refused Free changed nothing
			t.noErr(rmr.Free(), "RMR.Free")
			t.noErr(r.lmr.Free(), "LMR.Free once the RMR is gone")
		}},
		{"DESCRIPTION", "a DTO using a freed LMR's context is refused or fails with a protection error", func(t *checkT) {
			p := t.pair()
			r := p.cli.region(64, rw)
			r.fill(0, 64, 0x17)
			t.noErr(r.lmr.Free(), "LMR.Free")
			t.sendFault(p, func(c api.Cookie) error {
				return p.cli.ep.PostSend(r.iov(0, 16), c, api.CompletionDefault)
			})
		}},
		{"DESCRIPTION", "remote use of a freed LMR's rmr_context fails (REMOTE_ACCESS, BROKEN, no byte changes)", func(t *checkT) {
			p := t.pair()
			r := p.srv.region(64, remote)
			rt := r.rtr(0, 16)
			t.rdmaWrite(p, rt, pattern(16, 2), 1)
			t.noErr(r.lmr.Free(), "LMR.Free")
			t.writeFault(p, r, rt)
		}},
		{"DESCRIPTION", "every call on a freed LMR, and every call that passes it, is DAT_INVALID_HANDLE", freedLMR},
	}},

	{page: "dat_pz_free", checks: []check{
		{"DESCRIPTION", "a PZ used by an LMR cannot be freed (DAT_INVALID_STATE_PZ_IN_USE) until the LMR is freed", func(t *checkT) {
			n := t.node()
			r := n.region(64, rw)
			t.inUse("PZ", n.pz.Free, api.SubStatePZInUse, "the LMR", r.lmr.Free)
		}},
		{"DESCRIPTION", "a PZ used by an EP cannot be freed (DAT_INVALID_STATE_PZ_IN_USE) until the EP is freed", func(t *checkT) {
			n := t.node()
			e := n.end(nil)
			t.inUse("PZ", n.pz.Free, api.SubStatePZInUse, "the EP", e.ep.Free)
		}},
		{"DESCRIPTION", "a PZ used by an RMR cannot be freed (DAT_INVALID_STATE_PZ_IN_USE) until the RMR is freed", func(t *checkT) {
			n := t.node()
			rmr := n.newRMR()
			t.inUse("PZ", n.pz.Free, api.SubStatePZInUse, "the RMR", rmr.Free)
		}},
		{"DESCRIPTION", "a PZ used by an SRQ cannot be freed (DAT_INVALID_STATE_PZ_IN_USE) until the SRQ is freed", func(t *checkT) {
			n := t.node()
			s := n.srq(4, 1)
			t.inUse("PZ", n.pz.Free, api.SubStatePZInUse, "the SRQ", s.Free)
		}},
		{"DESCRIPTION", "an unused PZ frees, and every call on it or that passes it is DAT_INVALID_HANDLE", freedPZ},
	}},

	{page: "dat_lmr_sync_rdma_read", checks: syncChecks(func(ia api.IA, segs []api.LMRTriplet) error { return ia.SyncRDMARead(segs) })},
	{page: "dat_lmr_sync_rdma_write", checks: syncChecks(func(ia api.IA, segs []api.LMRTriplet) error { return ia.SyncRDMAWrite(segs) })},

	{page: "dat_pz_query", checks: []check{
		{"DESCRIPTION", "a PZ reports the IA it belongs to", func(t *checkT) {
			n := t.node()
			pp, err := n.pz.Query()
			t.noErr(err, "PZ.Query")
			if pp.IA != n.ia {
				t.Fatalf("PZ.Query names another IA")
			}
		}},
	}},
}

// syncChecks are the checks shared by dat_lmr_sync_rdma_read(3DAT) and
// dat_lmr_sync_rdma_write(3DAT).
func syncChecks(sync func(api.IA, []api.LMRTriplet) error) []check {
	return []check{
		{"DESCRIPTION", "segments of several LMRs and PZs are synchronized in one call", func(t *checkT) {
			n := t.node()
			pz2 := n.newPZ()
			a := n.region(64, remote)
			b := n.regionIn(pz2, 64, remote)
			t.noErr(sync(n.ia, []api.LMRTriplet{a.tr(0, 64), b.tr(8, 16)}), "synchronizing two segments")
		}},
		{"RETURN VALUES", "a segment outside its LMR is DAT_INVALID_PARAMETER", func(t *checkT) {
			n := t.node()
			r := n.region(64, remote)
			t.wantErr(sync(n.ia, []api.LMRTriplet{r.tr(len(r.b)-8, 16)}), api.ErrInvalidParameter, "synchronizing a segment running past its LMR")
		}},
	}
}

// scoped is what boundOnFirstOfTwo made: two connections from one client
// node to one server node, and an RMR of the server bound for the first.
type scoped struct {
	first, second *pair
	r             *region // the server region the window is bound to
	rt            api.RMRTriplet
	scope         api.RMRScope
}

// boundOnFirstOfTwo connects two client EPs to one server through one PSP
// and binds a window of all 64 bytes of a server region, for remote read
// and write, on the first connection's server EP: the set-up of the
// checks of an RMR's scope.
func (t *checkT) boundOnFirstOfTwo() *scoped {
	t.T.Helper()
	srv, cli := t.node(), t.node()
	_, q := srv.listen(api.PSPConsumer)
	c1, s1 := t.connectTo(cli, srv, q)
	c2, s2 := t.connectTo(cli, srv, q)
	r := srv.region(64, remote)
	rmr, rt := s1.bind(r, 0, 64, rmrRW)
	rp, err := rmr.Query()
	t.noErr(err, "RMR.Query")
	return &scoped{first: &pair{cli: c1, srv: s1}, second: &pair{cli: c2, srv: s2}, r: r, rt: rt, scope: rp.Scope}
}
