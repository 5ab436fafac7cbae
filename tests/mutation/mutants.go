//go:build mutation

package main

// The mutants: each a plausible bug, one edit. Bugs the guard would hide
// from the consumer (a provider check the guard also makes) are left out:
// through the registry they change nothing.

const (
	lbDTO = "providers/loopback/dto.go"
	lbEP  = "providers/loopback/ep.go"
	lbMem = "providers/loopback/mem.go"
	lbCM  = "providers/loopback/cm.go"
	tcDTO = "providers/tcp/dto.go"
	tcMem = "providers/tcp/mem.go"
	tcFrm = "providers/tcp/conn_frames.go"
	tcAct = "providers/tcp/cm_active.go"
	tcPas = "providers/tcp/cm_passive.go"
	gHdr  = "registry/guard.go"
	gIA   = "registry/guard_ia.go"
	gEP   = "registry/guard_ep.go"
	gEVD  = "registry/guard_evd.go"
	gCM   = "registry/guard_cm.go"
	gMem  = "registry/guard_mem.go"
	gSRQ  = "registry/guard_srq.go"

	kMem   = "provider/kit/memreg/memreg.go"
	kObj   = "provider/kit/memreg/objects.go"
	kCompl = "provider/kit/completion/completion.go"
	kQueue = "provider/kit/eventq/queue.go"
)

// dropCheck removes check from the top of a guard method whose hooks line
// names op.
func dropCheck(id, file, op, check, desc string) mutant {
	hook := "\t\tdefer h.done(" + op + ", &g.hdr, h.start(" + op + "), &err)\n\t}\n"
	return mutant{id: id, area: "guard", file: file, desc: desc, old: hook + check, new: hook}
}

// dropLive removes the freed-handle check (g.live) of a guard method whose
// hooks line names op and whose check returns ret.
func dropLive(id, file, op, ret, desc string) mutant {
	return dropCheck(id, file, op, "\tif err := g.live(); err != nil {\n\t\treturn "+ret+"\n\t}\n", desc)
}

// dropFreed removes the freed check of a guard fast-path method.
func dropFreed(id, file, op, ret, desc string) mutant {
	return dropCheck(id, file, op, "\tif g.freed.Load() {\n\t\treturn "+ret+"\n\t}\n", desc)
}

var mutants = []mutant{
	// --- providers/loopback ---
	{id: "lb-send-len", area: "loopback", file: lbDTO, desc: "a send's completion reports length 0",
		old: "\t\tp.complete(w, api.DTOSuccess, n)\n\t\tif hard {",
		new: "\t\tp.complete(w, api.DTOSuccess, 0)\n\t\tif hard {"},
	{id: "lb-send-late", area: "loopback", file: lbDTO, desc: "a send's completions are posted before its bytes are copied",
		old: "\t\tsgl.Copy(dst, src)\n\t\top, rctx := api.OpReceive, api.RMRContext(0)",
		new: "\t\tdefer sgl.Copy(dst, src)\n\t\top, rctx := api.OpReceive, api.RMRContext(0)"},
	{id: "lb-recv-room", area: "loopback", file: lbDTO, desc: "a message one byte longer than the receive is accepted",
		old: "\tcase n > room:", new: "\tcase n > room+1:"},
	{id: "lb-write-late", area: "loopback", file: lbDTO, desc: "an RDMA write completes before its bytes are copied",
		old: "\tif write {\n\t\tsgl.Gather(span, segs)\n",
		new: "\tif write {\n\t\tp.complete(w, api.DTOSuccess, n)\n\t\tsgl.Gather(span, segs)\n\t\treturn\n"},
	{id: "lb-read-late", area: "loopback", file: lbDTO, desc: "an RDMA read completes before its bytes are copied",
		old: "\t} else {\n\t\tsgl.Scatter(segs, span)\n",
		new: "\t} else {\n\t\tp.complete(w, api.DTOSuccess, n)\n\t\tsgl.Scatter(segs, span)\n\t\treturn\n"},
	{id: "lb-write-len", area: "loopback", file: lbDTO, desc: "an RDMA write's completion reports length 0",
		old: "\t\tsgl.Gather(span, segs)\n",
		new: "\t\tsgl.Gather(span, segs)\n\t\tn = 0\n"},
	{id: "lb-read-len", area: "loopback", file: lbDTO, desc: "an RDMA read's completion reports length 0",
		old: "\t\tsgl.Scatter(segs, span)\n",
		new: "\t\tsgl.Scatter(segs, span)\n\t\tn = 0\n"},
	{id: "lb-reqs-max", area: "loopback", file: lbDTO, desc: "one request more than MaxRequestDTOs may wait",
		old: "\tif p.reqs.Len() >= p.Attr.MaxRequestDTOs {", new: "\tif p.reqs.Len() > p.Attr.MaxRequestDTOs {"},
	{id: "lb-suppress-flush", area: "loopback", file: lbDTO, desc: "a suppressed request flushed by a disconnect does not complete",
		old: "\t\tp.complete(w, api.DTOErrFlushed, 0)\n\t\tw.rmr, w.bind = nil, nil",
		new: "\t\tif w.Flags&api.CompletionSuppress == 0 {\n\t\t\tp.complete(w, api.DTOErrFlushed, 0)\n\t\t}\n\t\tw.rmr, w.bind = nil, nil"},
	{id: "lb-suppress-disc", area: "loopback", file: lbDTO, desc: "a suppressed request posted on a DISCONNECTED EP does not complete",
		old: "\tcase api.EPDisconnected:\n\t\tp.complete(w, api.DTOErrFlushed, 0)\n\t\treturn nil",
		new: "\tcase api.EPDisconnected:\n\t\tif w.Flags&api.CompletionSuppress == 0 {\n\t\t\tp.complete(w, api.DTOErrFlushed, 0)\n\t\t}\n\t\treturn nil"},
	{id: "lb-suppress-fail", area: "loopback", file: lbDTO, desc: "a suppressed request that fails does not complete",
		old: "\tp.complete(w, st, 0)\n\tp.breakConnection()",
		new: "\tif w.Flags&api.CompletionSuppress == 0 {\n\t\tp.complete(w, st, 0)\n\t}\n\tp.breakConnection()"},
	{id: "lb-recv-notify", area: "loopback", file: lbDTO, desc: "an unsignalled receive notifies",
		old: "\tp.RecvEVD.Deliver(&ev, notify)", new: "\tp.RecvEVD.Deliver(&ev, notify || rw.Flags&api.CompletionUnsignalled != 0)"},
	{id: "lb-recv-lenstatus", area: "loopback", file: lbDTO, desc: "a receive too small completes with a protection error",
		old: "q.completeRecv(rw, api.DTOErrLocalLength, 0, api.OpReceive, 0, true)",
		new: "q.completeRecv(rw, api.DTOErrLocalProtection, 0, api.OpReceive, 0, true)"},
	{id: "lb-solicited", area: "loopback", file: lbDTO, desc: "every message is taken as solicited",
		old: "w.Flags&api.CompletionSolicitedWait != 0)", new: "true)"},
	{id: "lb-graceful", area: "loopback", file: lbEP, desc: "a graceful disconnect flushes waiting sends",
		old: "p.DisconnectStep(flags, p.reqs.Len() > 0)", new: "p.DisconnectStep(flags, false)"},
	{id: "lb-recv-idle", area: "loopback", file: lbEP, desc: "recv_idle ignores one posted receive",
		old: "p.recvs.Len() == 0, p.reqs.Len() == 0", new: "p.recvs.Len() <= 1, p.reqs.Len() == 0"},
	{id: "lb-reject-pd", area: "loopback", file: lbCM, desc: "a rejection carries no private data",
		old: "\t\ta.PeerPD = bytes.Clone(privateData)\n\t\ta.toDisconnected(api.ConnectionPeerRejectedEvent, a.PeerPD)",
		new: "\t\ta.toDisconnected(api.ConnectionPeerRejectedEvent, nil)"},

	{id: "lb-accept-pd", area: "loopback", file: lbCM, desc: "ESTABLISHED on the active side carries no private data",
		old: "\ta.PeerPD = bytes.Clone(privateData)\n\ta.RemoteAddr", new: "\ta.PeerPD = nil\n\ta.RemoteAddr"},
	{id: "lb-rnr-pump", area: "loopback", file: lbDTO, desc: "a receive does not start a single send waiting at the peer",
		old: "\tif q := p.peer; q != nil && q.reqs.Len() > 0 {", new: "\tif q := p.peer; q != nil && q.reqs.Len() > 1 {"},
	{id: "lb-inval-op", area: "loopback", file: lbDTO, desc: "a receive with invalidate reports a plain receive",
		old: "\t\t\top, rctx = api.OpReceiveWithInvalidate, w.RMRContext", new: "\t\t\top, rctx = api.OpReceive, w.RMRContext"},

	// --- providers/tcp ---
	{id: "tcp-send-len", area: "tcp", file: tcDTO, desc: "a send's completion reports length 0",
		old: "f.Seq, w.seq, w.n, w.sent = c.txSeq, c.txSeq, n, true", new: "f.Seq, w.seq, w.n, w.sent = c.txSeq, c.txSeq, n*uint64(w.Kind), true"},
	{id: "tcp-write-len", area: "tcp", file: tcDTO, desc: "an RDMA write's completion reports length 0",
		old: "f.Seq, w.seq, w.n, w.sent = c.txSeq, c.txSeq, n, true", new: "f.Seq, w.seq, w.n, w.sent = c.txSeq, c.txSeq, n*uint64(1-w.Kind), true"},
	{id: "tcp-read-len", area: "tcp", file: tcDTO, desc: "an RDMA read's completion reports length 0",
		old: "w.seq, w.n, w.sent = c.txSeq, n, true", new: "w.seq, w.n, w.sent = c.txSeq, 0, true"},
	{id: "tcp-suppress-disc", area: "tcp", file: tcDTO, desc: "a suppressed request posted on a DISCONNECTED EP does not complete",
		old: "\tcase api.EPDisconnected:\n\t\tp.complete(w, api.DTOErrFlushed)\n\t\treturn nil",
		new: "\tcase api.EPDisconnected:\n\t\tif w.Flags&api.CompletionSuppress == 0 {\n\t\t\tp.complete(w, api.DTOErrFlushed)\n\t\t}\n\t\treturn nil"},
	{id: "tcp-recv-lenstatus", area: "tcp", file: tcFrm, desc: "a receive too small completes with a protection error",
		old: "\t\tbad = api.DTOErrLocalLength", new: "\t\tbad = api.DTOErrLocalProtection"},
	{id: "tcp-reqs-max", area: "tcp", file: tcDTO, desc: "one request more than MaxRequestDTOs may be outstanding",
		old: "\treturn p.reqs.Len() >= p.Attr.MaxRequestDTOs", new: "\treturn p.reqs.Len() > p.Attr.MaxRequestDTOs"},
	{id: "tcp-suppress-fail", area: "tcp", file: tcDTO, desc: "a suppressed request that fails or is flushed does not complete",
		old: "w.Event(&ev, p, w.rmr, st, w.n); post {", new: "w.Event(&ev, p, w.rmr, st, w.n); post && w.Flags&api.CompletionSuppress == 0 {"},
	{id: "tcp-suppress-flush", area: "tcp", file: tcDTO, desc: "a suppressed request flushed by a disconnect does not complete",
		old: "\t\tif w.Kind == completion.Bind {\n\t\t\tw.dropBind(p.ia)\n\t\t}\n\t\tp.complete(w, st)",
		new: "\t\tif w.Kind == completion.Bind {\n\t\t\tw.dropBind(p.ia)\n\t\t}\n\t\tif w.Flags&api.CompletionSuppress == 0 || st != api.DTOErrFlushed {\n\t\t\tp.complete(w, st)\n\t\t}"},
	{id: "tcp-recv-notify", area: "tcp", file: tcDTO, desc: "an unsignalled receive notifies",
		old: "\tp.RecvEVD.post(&ev, notify)", new: "\tp.RecvEVD.post(&ev, notify || rw.Flags&api.CompletionUnsignalled != 0)"},
	{id: "tcp-fence", area: "tcp", file: tcDTO, desc: "a barrier fence does not wait for reads in flight",
		old: "w.Flags&api.CompletionBarrierFence != 0 && c.inFlight > 0", new: "w.Flags&api.CompletionBarrierFence != 0 && c.inFlight > 1"},
	{id: "tcp-recv-room", area: "tcp", file: tcFrm, desc: "a message one byte longer than the receive is accepted",
		old: "\tcase uint64(f.Len) > room:", new: "\tcase uint64(f.Len) > room+1:"},
	{id: "tcp-recv-len", area: "tcp", file: tcFrm, desc: "a receive's completion reports the length less one",
		old: "p.completeRecv(&c.cur, api.DTOSuccess, uint64(f.Len), op", new: "p.completeRecv(&c.cur, api.DTOSuccess, max(uint64(f.Len), 1)-1, op"},
	{id: "tcp-write-ack-early", area: "tcp", file: tcFrm, desc: "an RDMA write is acknowledged before its payload is placed",
		old: "\tif f.Len == 0 {\n\t\treturn nil, true\n\t}\n\tc.rsegs = append(c.rsegs[:0], dst)",
		new: "\tif f.Len == 0 {\n\t\treturn nil, true\n\t}\n\tc.placed = f.Seq\n\tc.cond.Signal()\n\tc.rsegs = append(c.rsegs[:0], dst)"},
	{id: "tcp-send-ack-early", area: "tcp", file: tcFrm, desc: "a send is acknowledged before its payload is placed",
		old: "\tc.inRecv = true\n\treturn dst, true",
		new: "\tc.inRecv = true\n\tc.placed = f.Seq\n\tc.cond.Signal()\n\treturn dst, true"},

	{id: "tcp-inval-unbind", area: "tcp", file: tcFrm, desc: "a receive with invalidate leaves the RMR bound",
		old: "\t\t\tr.Unbind()\n", new: "\t\t\t_ = r\n"},
	{id: "tcp-nak-status", area: "tcp", file: tcFrm, desc: "a refused request completes as flushed, not with the peer's status",
		old: "w.failed, w.status = true, api.DTOStatus(f.Status)", new: "w.failed, w.status = true, api.DTOErrFlushed"},
	{id: "tcp-reject-pd", area: "tcp", file: tcAct, desc: "a rejection carries no private data",
		old: "c.failConnect(api.ConnectionPeerRejectedEvent, c.pd)", new: "c.failConnect(api.ConnectionPeerRejectedEvent, nil)"},
	{id: "tcp-accept-pd", area: "tcp", file: tcPas, desc: "the accept's private data arrives as zeros",
		old: "\t\tcopy(b[hsLen:], pr.pd)\n\t\t_ = nc.SetDeadline(time.Now().Add(hsTimeout))", new: "\t\t_ = nc.SetDeadline(time.Now().Add(hsTimeout))"},
	{id: "tcp-hs-timeout", area: "tcp", file: tcAct, desc: "a connect unanswered within its timeout ends NON_PEER_REJECTED, not TIMED_OUT",
		old: "if errors.As(err, &ne) && ne.Timeout() && !c.aborted {", new: "if errors.As(err, &ne) && false {"},
	{id: "tcp-refused", area: "tcp", file: tcAct, desc: "a connect to a port nobody listens on ends UNREACHABLE",
		old: "errors.Is(err, syscall.ECONNRESET):\n\t\treturn api.ConnectionNonPeerRejectedEvent", new: "errors.Is(err, syscall.ECONNRESET):\n\t\treturn api.ConnectionUnreachableEvent"},
	{id: "tcp-handoff-full", area: "tcp", file: tcPas, desc: "a handoff to a service point whose backlog is full succeeds",
		old: "\tif !sp.arrive(c.pr) {\n\t\treturn api.Errorf(api.InsufficientResources", new: "\tif !sp.arrive(c.pr) && false {\n\t\treturn api.Errorf(api.InsufficientResources"},
	{id: "tcp-abort-event", area: "tcp", file: tcPas, desc: "closing an IA rejects its pending requests as PEER_REJECTED",
		old: "\tc.Done = true\n\tc.pr.decide(hsNonPeer, nil)", new: "\tc.Done = true\n\tc.pr.decide(hsReject, nil)"},
	{id: "tcp-accept-gone", area: "tcp", file: tcPas, desc: "an accept whose requester is gone reports DISCONNECTED, not ACCEPT_COMPLETION_ERROR",
		old: "p.toDisconnected(api.ConnectionAcceptCompletionErrorEvent, nil)", new: "p.toDisconnected(api.ConnectionDisconnectedEvent, nil)"},
	{id: "lb-handoff-full", area: "loopback", file: lbCM, desc: "a handoff to a service point whose backlog is full succeeds",
		old: "\tif !sp.arrive(n) {\n\t\treturn api.Errorf(api.InsufficientResources", new: "\tif !sp.arrive(n) && false {\n\t\treturn api.Errorf(api.InsufficientResources"},
	{id: "lb-abort-event", area: "loopback", file: lbCM, desc: "closing an IA rejects its pending requests as PEER_REJECTED",
		old: "\t\ta.toDisconnected(api.ConnectionNonPeerRejectedEvent, nil)\n\t}\n\tc.Done = true", new: "\t\ta.toDisconnected(api.ConnectionPeerRejectedEvent, nil)\n\t}\n\tc.Done = true"},
	{id: "lb-getstatus", area: "loopback", file: lbEP, desc: "GetStatus swaps its receive-idle and request-idle flags",
		old: "return p.State, p.recvs.Len() == 0, p.reqs.Len() == 0, nil", new: "return p.State, p.reqs.Len() == 0, p.recvs.Len() == 0, nil"},
	{id: "lb-timeout-event", area: "loopback", file: lbCM, desc: "a connect unanswered within its timeout ends NON_PEER_REJECTED, not TIMED_OUT",
		old: "p.toDisconnected(api.ConnectionTimedOutEvent, nil)", new: "p.toDisconnected(api.ConnectionNonPeerRejectedEvent, nil)"},
	{id: "tcp-graceful", area: "tcp", file: "providers/tcp/ep.go", desc: "a graceful disconnect does not wait for outstanding requests",
		old: "p.DisconnectStep(flags, p.reqs.Len() > 0)", new: "p.DisconnectStep(flags, false)"},

	// --- registry/guard*.go ---
	{id: "g-evd-enable", area: "guard", file: gEVD, desc: "Enable on a freed EVD reaches the provider",
		old: "return g.simple(g.p.Enable)", new: "return g.p.Enable()"},
	{id: "g-evd-disable", area: "guard", file: gEVD, desc: "Disable on a freed EVD reaches the provider",
		old: "return g.simple(g.p.Disable)", new: "return g.p.Disable()"},
	{id: "g-evd-unwait", area: "guard", file: gEVD, desc: "SetUnwaitable on a freed EVD reaches the provider",
		old: "return g.simple(g.p.SetUnwaitable)", new: "return g.p.SetUnwaitable()"},
	{id: "g-evd-clrunwait", area: "guard", file: gEVD, desc: "ClearUnwaitable on a freed EVD reaches the provider",
		old: "return g.simple(g.p.ClearUnwaitable)", new: "return g.p.ClearUnwaitable()"},
	dropLive("g-evd-resize", gEVD, "opEVDResize", "err", "Resize on a freed EVD reaches the provider"),
	dropLive("g-evd-modcno", gEVD, "opEVDModifyCNO", "err", "ModifyCNO on a freed EVD reaches the provider"),
	dropLive("g-ep-modify", gEP, "opEPModify", "err", "Modify on a freed EP reaches the provider"),
	dropLive("g-ep-connect", gEP, "opEPConnect", "err", "Connect on a freed EP reaches the provider"),
	dropLive("g-ep-disc", gEP, "opEPDisconnect", "err", "Disconnect on a freed EP reaches the provider"),
	{id: "g-ep-reset", area: "guard", file: gEP, desc: "Reset on a freed EP reaches the provider",
		old: "return g.simple(g.p.Reset)", new: "g.ia.enter()\n\tdefer g.ia.leave()\n\treturn g.p.Reset()"},
	dropLive("g-ep-recvq", gEP, "opEPRecvQuery", "0, 0, err", "RecvQuery on a freed EP reaches the provider"),
	dropLive("g-ep-wm", gEP, "opEPSetWatermark", "err", "SetWatermark on a freed EP reaches the provider"),
	dropLive("g-ep-dup", gEP, "opEPDupConnect", "err", "DupConnect on a freed EP reaches the provider"),
	dropFreed("g-ep-write", gEP, "opEPPostWrite", "errFreedEP", "PostRDMAWrite on a freed EP reaches the provider"),
	dropFreed("g-ep-sendinv", gEP, "opEPPostSendInv", "errFreedEP", "PostSendWithInvalidate on a freed EP reaches the provider"),
	dropFreed("g-ep-send", gEP, "opEPPostSend", "errFreedEP", "PostSend on a freed EP reaches the provider"),
	{id: "g-qos", area: "guard", file: "registry/guard_ia.go", desc: "a QOS the provider does not support reaches it",
		old: "if q&^ia.pattr.QOSSupported != 0 {", new: "if false {"},
	{id: "g-wm-range", area: "guard", file: gEP, desc: "a negative soft watermark reaches the provider",
		old: "if (soft < 0 && soft != api.WatermarkInfinite) || ", new: "if "},
	{id: "g-cr-reject-pd", area: "guard", file: gCM, desc: "Reject passes private data above the provider's limit",
		old: "if err := g.ia.checkPrivateData(privateData, api.SubArg2); err != nil {", new: "if err := error(nil); err != nil {"},
	dropLive("g-srq-resize", gSRQ, "opSRQResize", "err", "Resize on a freed SRQ reaches the provider"),
	dropLive("g-srq-lw", gSRQ, "opSRQSetLW", "err", "SetLW on a freed SRQ reaches the provider"),
	dropLive("g-cno-agent", gEVD, "opCNOModifyAgent", "err", "ModifyAgent on a freed CNO reaches the provider"),
	dropLive("g-cno-wait", gEVD, "opCNOWait", "nil, err", "Wait on a freed CNO reaches the provider"),
	dropLive("g-rmr-bind", gMem, "opRMRBind", "0, err", "Bind on a freed RMR reaches the provider"),
	dropLive("g-pz-rmr", gMem, "opPZCreateRMR", "nil, err", "CreateRMR on a freed PZ reaches the provider"),
	{id: "g-setctx", area: "guard", file: gHdr, desc: "SetConsumerContext on a freed object succeeds",
		old: "\tif h.freed.Load() {\n\t\treturn freedErr(h.typ)\n\t}\n\treturn h.cc.SetConsumerContext(v)",
		new: "\treturn h.cc.SetConsumerContext(v)"},
	{id: "g-own-freed", area: "guard", file: gHdr, desc: "a freed handle passed as an argument is accepted",
		old: "\tif hd.freed.Load() {\n\t\treturn zero, api.Errorf(api.InvalidHandle, sub, what+\" handle was freed\")\n\t}\n",
		new: ""},
	{id: "g-close-freed", area: "guard", file: gIA, desc: "an abrupt close leaves the IA's objects live in the guard",
		old: "\t\tv.(guarded).header().freed.Store(true)\n", new: ""},
	{id: "g-inuse", area: "guard", file: gHdr, desc: "an object used by exactly one other may be freed",
		old: "if users := h.users.list(); len(users) > 0 {", new: "if users := h.users.list(); len(users) > 1 {"},
	{id: "g-write-len", area: "guard", file: gEP, desc: "an RDMA write one byte longer than its remote segment is posted",
		old: "iovLen(iov) > uint64(remote.Length)", new: "iovLen(iov) > uint64(remote.Length)+1"},
	{id: "g-read-len", area: "guard", file: gEP, desc: "an RDMA read into an IOV one byte shorter than the remote segment is posted",
		old: "iovLen(iov) < uint64(remote.Length)", new: "iovLen(iov)+1 < uint64(remote.Length)"},
	{id: "g-srq-iov", area: "guard", file: gSRQ, desc: "an SRQ receive may have one segment more than MaxRecvIOV",
		old: "int64(len(iov)) > g.maxIOV.Load()", new: "int64(len(iov)) > g.maxIOV.Load()+1"},
	{id: "g-bind-eppz", area: "guard", file: gMem, desc: "a bind on an EP of another PZ than the RMR is let through",
		old: "\tif gep.pz != g.pz {", new: "\tif false && gep.pz != g.pz {"},
	{id: "g-bind-lmrpz", area: "guard", file: gMem, desc: "a bind of an LMR of another PZ than the RMR is let through",
		old: "\tif glmr != nil && glmr.pz != g.pz {", new: "\tif false && glmr != nil && glmr.pz != g.pz {"},
	{id: "g-recv-unsig", area: "guard", file: gEP, desc: "an unsignalled receive is accepted on an EP not configured for it",
		old: "\tif flags&api.CompletionUnsignalled != 0 && l.recvFlags&api.CompletionUnsignalled == 0 {\n\t\treturn errUnsignalledReq\n\t}\n\tif s := g.ia.serial",
		new: "\tif s := g.ia.serial"},
	{id: "g-wait-thresh", area: "guard", file: gEVD, desc: "a Wait threshold of qlen+1 is accepted",
		old: "threshold <= 0 || int64(threshold) > q", new: "threshold <= 0 || int64(threshold) > q+1"},
	{id: "g-psp-free", area: "guard", file: gCM, desc: "a freed PSP keeps its EVD in use",
		old: "\treturn release(g, g.p, api.NoSubtype, g.p.Free, &g.evd.users)\n}\n\n// gRSP",
		new: "\treturn release(g, g.p, api.NoSubtype, g.p.Free)\n}\n\n// gRSP"},
	{id: "g-lmr-free", area: "guard", file: gMem, desc: "a freed LMR keeps its PZ in use",
		old: "release(g, g.p, api.SubStateLMRInUse, g.p.Free, &g.pz.users)",
		new: "release(g, g.p, api.SubStateLMRInUse, g.p.Free)"},
	{id: "g-rmr-free", area: "guard", file: gMem, desc: "a freed RMR keeps its PZ in use",
		old: "release(g, g.p, api.NoSubtype, g.p.Free, &g.pz.users)",
		new: "release(g, g.p, api.NoSubtype, g.p.Free)"},
	{id: "g-evd-free-cno", area: "guard", file: gEVD, desc: "a freed EVD keeps its CNO in use",
		old: "\t\tif c := g.cno.Swap(nil); c != nil {\n\t\t\tc.users.add(&g.hdr, -1)\n\t\t}\n",
		new: "\t\tg.cno.Swap(nil)\n"},
	{id: "g-modcno-old", area: "guard", file: gEVD, desc: "the CNO an EVD no longer feeds stays in use",
		old: "\tif old := g.cno.Swap(gc); old != nil {\n\t\told.users.add(&g.hdr, -1)\n\t}\n",
		new: "\tg.cno.Swap(gc)\n"},
	{id: "g-sol-thresh", area: "guard", file: gEP, desc: "a solicited-wait receive stream does not restrict the EVD's threshold",
		old: "l.recvFlags&(api.CompletionUnsignalled|api.CompletionSolicitedWait) != 0", new: "l.recvFlags&api.CompletionUnsignalled != 0"},
	{id: "g-readrmr-len", area: "guard", file: gEP, desc: "a read to an RMR window shorter than the remote segment is posted",
		old: "\tif local.Length < remote.Length {", new: "\tif local.Length+1 < remote.Length {"},

	{id: "g-bind-ctx", area: "guard", file: gMem, desc: "a bind triplet naming another LMR than the handle is let through",
		old: "if glmr != nil && glmr.hasCtx && !unbind && t.LMRContext != glmr.ctx {", new: "if false && glmr != nil && glmr.hasCtx && !unbind && t.LMRContext != glmr.ctx {"},
	{id: "g-own-foreign", area: "guard", file: gHdr, desc: "a handle of another IA passed as an argument is accepted",
		old: "\tif hd.ia != ia {\n\t\treturn zero, api.Errorf(api.InvalidHandle, sub, what+\" handle belongs to another IA\")\n\t}\n", new: ""},
	{id: "g-evdfor", area: "guard", file: gIA, desc: "an EVD without the stream an EP or service point needs is accepted",
		old: "\tif g.flags&need == 0 {", new: "\tif false && g.flags&need == 0 {"},

	// --- internal packages shared by loopback and tcp ---
	{id: "kit-recvs-max", area: "kit", file: "provider/kit/completion/recvs.go", desc: "an EP takes one receive more than MaxRecvDTOs",
		old: "case q.Len() >= max:", new: "case q.Len() > max:"},
	{id: "kit-srq-max", area: "kit", file: "provider/kit/srqattr/queue.go", desc: "an SRQ takes one receive more than its size",
		old: "\tif q.recvs.Len() >= q.max {", new: "\tif q.recvs.Len() > q.max {"},
	{id: "kit-srq-lw", area: "kit", file: "provider/kit/srqattr/queue.go", desc: "the SRQ low watermark fires at the watermark, not below",
		old: "q.armed && q.recvs.Len() < q.lw", new: "q.armed && q.recvs.Len() <= q.lw"},
	{id: "kit-srq-resize", area: "kit", file: "provider/kit/srqattr/queue.go", desc: "an SRQ shrinks to one below the receives it holds",
		old: "CheckResize(n, q.recvs.Len(), q.lw)", new: "CheckResize(n, q.recvs.Len()-1, q.lw)"},
	{id: "kit-srq-take-lw", area: "kit", file: "provider/kit/srqattr/queue.go", desc: "taking a receive never fires the low watermark",
		old: "\tq.recvs.PopFront()\n\tq.checkLW()\n", new: "\tq.recvs.PopFront()\n"},
	{id: "in-span", area: "kit", file: "provider/kit/memreg/memreg.go", desc: "a remote range one byte past its window is accepted",
		old: "n > uint64(len(mem))-off {", new: "n > uint64(len(mem))-off+1 {"},
	{id: "in-overflow-again", area: "kit", file: "provider/kit/eventq/queue.go", desc: "an overflow is reported only once per EVD",
		old: "\tq.queued.Store(int32(q.n))\n\tq.overflowed = false\n", new: "\tq.queued.Store(int32(q.n))\n"},
	{id: "in-suppress", area: "kit", file: "provider/kit/completion/completion.go", desc: "a suppressed request never completes, failed or not",
		old: "if st == api.DTOSuccess && r.Flags&api.CompletionSuppress != 0 {", new: "if r.Flags&api.CompletionSuppress != 0 {"},
	{id: "in-bind-wpriv", area: "kit", file: "provider/kit/memreg/objects.go", desc: "remote write binds on an LMR without local write",
		old: "\tcase priv&api.MemPrivRemoteWrite != 0 && l.Region.Priv&api.MemPrivLocalWrite == 0:", new: "\tcase false:"},
	{id: "in-evd-resize", area: "kit", file: "provider/kit/eventq/queue.go", desc: "an EVD shrinks to one below the events it holds",
		old: "\tcase qlen < q.n:", new: "\tcase qlen < q.n-1:"},
	{id: "in-disconnect-wait", area: "kit", file: "provider/kit/epattr/endpoint.go", desc: "a graceful disconnect does not wait for outstanding requests",
		old: "if flags == api.CloseGraceful && outstanding {", new: "if false && flags == api.CloseGraceful {"},
	{id: "in-links-modify-evd", area: "kit", file: "provider/kit/epattr/links.go", desc: "dat_ep_modify keeps the old receive EVD",
		old: "\tif mask&api.EPFieldRecvEVD != 0 {\n\t\tl.RecvEVD, _ = prm.RecvEVD.(E)", new: "\tif false {\n\t\tl.RecvEVD, _ = prm.RecvEVD.(E)"},

	// --- the kit's memory, event queue, completion and connection rules ---
	{id: "kit-gather-priv", area: "kit", file: kMem, desc: "a local segment is used without the privilege its DTO needs",
		old: "r.PZ != pz || r.Priv&need != need {", new: "r.PZ != pz {"},
	{id: "kit-gather-pz", area: "kit", file: kMem, desc: "a local segment of an LMR in another PZ is used",
		old: "pz == zero || r.PZ != pz || r.Priv", new: "pz == zero || r.Priv"},
	{id: "kit-remote-priv", area: "kit", file: kMem, desc: "a remote access the window does not grant is served",
		old: "if w == nil || w.Priv&need != need || w.PZ", new: "if w == nil || w.PZ"},
	{id: "kit-remote-pz", area: "kit", file: kMem, desc: "a remote access reaches a window of another PZ than the EP's",
		old: "w.Priv&need != need || w.PZ != pz || (w.EP", new: "w.Priv&need != need || (w.EP"},
	{id: "kit-remote-ep", area: "kit", file: kMem, desc: "a remote access reaches a window bound to another EP",
		old: "(w.EP != zeroEP && w.EP != ep) {\n\t\treturn nil, false", new: "(w.EP != zeroEP && false) {\n\t\treturn nil, false"},
	{id: "kit-bind-rpriv", area: "kit", file: kObj, desc: "remote read binds on an LMR without local read",
		old: "\tcase priv&api.MemPrivRemoteRead != 0 && l.Region.Priv&api.MemPrivLocalRead == 0:", new: "\tcase false:"},
	{id: "kit-bind-span", area: "kit", file: kObj, desc: "a bind of a window reaching past its LMR is accepted",
		old: "\tif _, ok := Span(l.Region.Mem, l.Region.Base, t.Addr, uint64(t.Length)); !ok {", new: "\tif false {"},
	{id: "kit-inval-ep", area: "kit", file: kObj, desc: "a send with invalidate unbinds an RMR bound to another EP",
		old: "if w == nil || w.PZ != pz || (w.EP != zeroEP && w.EP != ep) {\n\t\treturn nil", new: "if w == nil || w.PZ != pz || (w.EP != zeroEP && false) {\n\t\treturn nil"},
	{id: "kit-bind-cookie", area: "kit", file: kCompl, desc: "a bind's completion loses its cookie",
		old: "api.RMRBindCompletionData{RMR: rmr, Cookie: r.Cookie, Status: st}", new: "api.RMRBindCompletionData{RMR: rmr, Status: st}"},
	{id: "kit-evd-disabled", area: "kit", file: kQueue, desc: "a disabled EVD still triggers its CNO",
		old: "\tif !q.disabled {\n\t\treturn q.cno\n\t}\n", new: "\tif true {\n\t\treturn q.cno\n\t}\n"},
	{id: "kit-evd-threshold", area: "kit", file: kQueue, desc: "a Wait returns with fewer events than its threshold",
		old: "\t\tif q.n >= threshold {\n\t\t\tq.pop(ev)", new: "\t\tif q.n >= 1 {\n\t\t\tq.pop(ev)"},
	{id: "kit-evd-unwaitable", area: "kit", file: kQueue, desc: "making an EVD unwaitable leaves its waiter blocked",
		old: "\tif on && q.waiting {", new: "\tif false {"},
	{id: "kit-evd-resize-order", area: "kit", file: kQueue, desc: "a resize reverses the queued events",
		old: "\t\tnb[i] = q.buf[j]", new: "\t\tnb[q.n-1-i] = q.buf[j]"},
	{id: "kit-evd-state", area: "kit", file: kQueue, desc: "a disabled EVD reports itself enabled",
		old: "\t\ts |= api.EVDStateDisabled\n", new: "\t\ts |= api.EVDStateEnabled\n"},
	{id: "kit-qual-inuse", area: "kit", file: "provider/kit/connreq/quals.go", desc: "a connection qualifier in use is taken again",
		old: "\tif _, ok := t.on[q]; ok {\n\t\treturn api.Errorf(api.ConnQualInUse", new: "\tif false {\n\t\treturn api.Errorf(api.ConnQualInUse"},
	{id: "kit-accept-other", area: "kit", file: "provider/kit/connreq/connreq.go", desc: "an accept naming another EP than the request's own connects the request's",
		old: "\tcase local != zero && given != zero && given != local:", new: "\tcase false:"},
}
