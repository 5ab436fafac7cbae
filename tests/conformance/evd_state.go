package conformance

import "github.com/godat/godat/api"

// evdStateGroups checks an EVD's states and bindings: enabled or
// disabled, waitable or not, the CNO it feeds, and freeing it.
var evdStateGroups = []group{
	{page: "dat_evd_disable", checks: []check{
		{"DESCRIPTION", "a disabled EVD reports DISABLED and still wakes its direct waiters", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			t.noErr(e.Disable(), "EVD.Disable")
			t.noErr(e.Disable(), "EVD.Disable of a disabled EVD (a no-op)")
			if st := t.queryEVD(e).State; st&api.EVDStateDisabled == 0 {
				t.Fatalf("EVD state %#x after Disable, want DISABLED", st)
			}
			c := t.goWait(e, 1, eventTimeout)
			t.postSE(e, "x")
			t.waiterGot(c, e, "x", "a direct waiter on a disabled EVD")
		}},
		{"DESCRIPTION", "the events of a disabled EVD are queued but do not trigger its CNO", func(t *checkT) {
			c, e := t.node().cnoSE()
			t.noErr(e.Disable(), "EVD.Disable")
			t.postSE(e, "x")
			t.neverTriggered(c, "after an event on the disabled EVD")
			t.expectSE(t.dequeue(e, "EVD.Dequeue on the disabled EVD"), e, "x", "the disabled EVD's event")
			t.noErr(e.Enable(), "EVD.Enable")
			t.postSE(e, "y")
			t.eventuallyTriggered(c, e, "after an event on the re-enabled EVD")
		}},
	}},

	{page: "dat_evd_enable", checks: []check{
		{"DESCRIPTION", "a re-enabled EVD reports ENABLED and its events trigger its CNO", func(t *checkT) {
			c, e := t.node().cnoSE()
			t.noErr(e.Disable(), "EVD.Disable")
			t.noErr(e.Enable(), "EVD.Enable")
			t.noErr(e.Enable(), "EVD.Enable of an enabled EVD (a no-op)")
			if st := t.queryEVD(e).State; st&api.EVDStateEnabled == 0 {
				t.Fatalf("EVD state %#x after Enable, want ENABLED", st)
			}
			t.postSE(e, "x")
			if got := t.cnoWait(c, "CNO.Wait"); got != e {
				t.Fatalf("CNO.Wait returned another EVD than the one with the event")
			}
		}},
	}},

	{page: "dat_evd_set_unwaitable", checks: []check{
		{"DESCRIPTION", "a blocked waiter wakes with DAT_INVALID_STATE", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			// The wait's own deadline lies beyond recvResult's: a
			// waiter that SetUnwaitable does not wake would otherwise
			// time out and then report the queue unwaitable.
			c := t.goWait(e, 1, 3*eventTimeout)
			t.untilWaiter(e, "waiting for the waiter to block")
			t.noErr(e.SetUnwaitable(), "EVD.SetUnwaitable")
			r := t.recvResult(c, "the waiter woken by SetUnwaitable")
			t.wantErr(r.err, api.ErrInvalidState, "the Wait that SetUnwaitable ended")
		}},
		{"DESCRIPTION", "Wait on an unwaitable EVD is DAT_INVALID_STATE, events still arrive for Dequeue, and Query reports UNWAITABLE", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			t.noErr(e.SetUnwaitable(), "EVD.SetUnwaitable")
			t.postSE(e, "x")
			_, _, err := waitN(e, 1, shortWait)
			t.wantErr(err, api.ErrInvalidState, "Wait on an unwaitable EVD")
			if st := t.queryEVD(e).State; st&api.EVDStateUnwaitable == 0 {
				t.Errorf("EVD state %#x, want UNWAITABLE", st)
			}
			t.expectSE(t.dequeue(e, "Dequeue on an unwaitable EVD"), e, "x", "the event posted while unwaitable")
		}},
	}},

	{page: "dat_evd_clear_unwaitable", checks: []check{
		{"DESCRIPTION", "after ClearUnwaitable Wait works again and Query reports WAITABLE", func(t *checkT) {
			e, _ := t.node().seEVD(8, nil)
			t.noErr(e.SetUnwaitable(), "EVD.SetUnwaitable")
			t.noErr(e.ClearUnwaitable(), "EVD.ClearUnwaitable")
			if st := t.queryEVD(e).State; st&api.EVDStateWaitable == 0 {
				t.Errorf("EVD state %#x, want WAITABLE", st)
			}
			t.postSE(e, "x")
			t.expectSE(t.wait(e, "the event"), e, "x", "Wait after ClearUnwaitable")
		}},
	}},

	{page: "dat_evd_modify_cno", checks: []check{
		{"DESCRIPTION", "after ModifyCNO the EVD's events trigger the new CNO", func(t *checkT) {
			n := t.node()
			c1, c2 := n.cno(nil), n.cno(nil)
			e, _ := n.seEVD(8, c1)
			t.noErr(e.ModifyCNO(c2), "EVD.ModifyCNO")
			if p := t.queryEVD(e); p.CNO != c2 {
				t.Errorf("EVD.Query does not report the new CNO")
			}
			t.postSE(e, "x")
			if got := t.cnoWait(c2, "Wait on the new CNO"); got != e {
				t.Fatalf("the new CNO returned another EVD")
			}
		}},
		{"DESCRIPTION", "ModifyCNO(nil) detaches the CNO, which can then be freed", func(t *checkT) {
			c, e := t.node().cnoSE()
			t.noErr(e.ModifyCNO(nil), "EVD.ModifyCNO(nil)")
			if p := t.queryEVD(e); p.CNO != nil {
				t.Errorf("EVD.Query still reports a CNO")
			}
			t.noErr(c.Free(), "CNO.Free once no EVD feeds it")
		}},
		{"RETURN VALUES", "a CNO of another IA is DAT_INVALID_HANDLE", func(t *checkT) {
			a, b := t.node(), t.node()
			e, _ := a.seEVD(8, nil)
			t.wantErr(e.ModifyCNO(b.cno(nil)), api.ErrInvalidHandle, "ModifyCNO with a CNO of another IA")
		}},
	}},

	{page: "dat_evd_free", checks: []check{
		// USAGE excepts the IA's own EVDs from the advice to free their
		// feeders first: the IA feeds its async EVD and frees it itself.
		{"RETURN VALUES", "the IA's async EVD, fed by the IA's asynchronous stream, cannot be freed while the IA is open (DAT_INVALID_STATE)", func(t *checkT) {
			n := t.node()
			t.wantErr(n.async.Free(), api.ErrInvalidState, "EVD.Free of the IA's async EVD")
			if _, err := n.async.Query(); err != nil {
				t.Fatalf("EVD.Query of the async EVD after the refused Free: %v", err)
			}
		}},
		{"RETURN VALUES", "an EVD used by an EP cannot be freed (DAT_INVALID_STATE_EVD_IN_USE) until the EP is freed", func(t *checkT) {
			n := t.node()
			e := n.end(nil)
			t.inUse("EVD", n.recv.Free, api.SubStateEVDInUse, "the EP", e.ep.Free)
		}},
		{"RETURN VALUES", "an EVD used by a PSP cannot be freed (DAT_INVALID_STATE_EVD_IN_USE) until the PSP is freed", func(t *checkT) {
			n := t.node()
			psp, _ := n.listen(api.PSPConsumer)
			t.inUse("EVD", n.cr.Free, api.SubStateEVDInUse, "the PSP", psp.Free)
		}},
		{"RETURN VALUES", "an EVD used by an RSP cannot be freed (DAT_INVALID_STATE_EVD_IN_USE) until the RSP is freed", func(t *checkT) {
			n := t.node()
			rsp := n.reserve(n.end(nil).ep, n.freeQual())
			t.inUse("EVD", n.cr.Free, api.SubStateEVDInUse, "the RSP", rsp.Free)
		}},
		{"USAGE", "the IA's async EVD cannot be freed by the consumer (DAT_INVALID_STATE_EVD_IN_USE)", func(t *checkT) {
			n := t.node()
			t.wantErr(n.async.Free(), sub(api.InvalidState, api.SubStateEVDInUse), "EVD.Free of the async EVD")
		}},
		{"DESCRIPTION", "every call on a freed EVD, and every call that passes it, is DAT_INVALID_HANDLE", freedEVD},
	}},
}
