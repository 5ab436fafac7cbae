package registry

// Hooks: counting and tracing of the calls an IA's guards take, switched
// on per IA by the configuration's hooks key (DESIGN §3). Every exported
// method of a guard starts with
//
//	if h := g.ia.hooks; h != nil {
//		defer h.done(opX, &g.hdr, h.start(opX), &err)
//	}
//
// or hands its whole call to a helper that does (simple, query, free), so
// an IA without hooks pays one nil check per call and allocates nothing
// (TestGuardHooksCoverEveryCall checks that no method is left out).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/godat/godat/api"
)

// The values of the hooks key.
const (
	hookCount     = "count"      // count calls and errors per operation (Counts)
	hookTrace     = "trace"      // log every call but those of the data path
	hookTraceData = "trace-data" // log every call, posts, dequeues and waits included
)

var hookNames = []string{hookCount, hookTrace, hookTraceData}

// op is one operation of the API, by index into ops.
type op int

// opInfo names an operation ("EP.PostSend": the api interface and the
// method) and says whether it is on the data path, which only trace-data
// logs.
type opInfo struct {
	name string
	data bool
}

var ops []opInfo

func defOp(name string, data bool) op {
	ops = append(ops, opInfo{name, data})
	return op(len(ops) - 1)
}

const (
	ctl  = false
	data = true
)

// The operations, one per exported method of the api interfaces.
var (
	opConsumerContext = defOp("Object.ConsumerContext", data)
	opSetContext      = defOp("Object.SetConsumerContext", data)

	opIAQuery        = defOp("IA.Query", ctl)
	opIAAsyncEVD     = defOp("IA.AsyncEVD", ctl)
	opIAClose        = defOp("IA.Close", ctl)
	opIACreatePZ     = defOp("IA.CreatePZ", ctl)
	opIACreateEVD    = defOp("IA.CreateEVD", ctl)
	opIACreateCNO    = defOp("IA.CreateCNO", ctl)
	opIACreateCNOFD  = defOp("IA.CreateCNOFD", ctl)
	opIACreateEP     = defOp("IA.CreateEP", ctl)
	opIACreateEPSRQ  = defOp("IA.CreateEPWithSRQ", ctl)
	opIACreatePSP    = defOp("IA.CreatePSP", ctl)
	opIACreatePSPAny = defOp("IA.CreatePSPAny", ctl)
	opIACreateRSP    = defOp("IA.CreateRSP", ctl)
	opIACreateLMR    = defOp("IA.CreateLMR", ctl)
	opIACreateSRQ    = defOp("IA.CreateSRQ", ctl)
	opIASyncRead     = defOp("IA.SyncRDMARead", data)
	opIASyncWrite    = defOp("IA.SyncRDMAWrite", data)

	opPZQuery     = defOp("PZ.Query", ctl)
	opPZCreateRMR = defOp("PZ.CreateRMR", ctl)
	opPZFree      = defOp("PZ.Free", ctl)

	opEVDQuery           = defOp("EVD.Query", ctl)
	opEVDResize          = defOp("EVD.Resize", ctl)
	opEVDPostSE          = defOp("EVD.PostSE", data)
	opEVDDequeue         = defOp("EVD.Dequeue", data)
	opEVDWait            = defOp("EVD.Wait", data)
	opEVDEnable          = defOp("EVD.Enable", ctl)
	opEVDDisable         = defOp("EVD.Disable", ctl)
	opEVDSetUnwaitable   = defOp("EVD.SetUnwaitable", ctl)
	opEVDClearUnwaitable = defOp("EVD.ClearUnwaitable", ctl)
	opEVDModifyCNO       = defOp("EVD.ModifyCNO", ctl)
	opEVDFree            = defOp("EVD.Free", ctl)

	opCNOQuery       = defOp("CNO.Query", ctl)
	opCNOModifyAgent = defOp("CNO.ModifyAgent", ctl)
	opCNOWait        = defOp("CNO.Wait", data)
	opCNOTriggered   = defOp("CNO.Triggered", data)
	opCNOFree        = defOp("CNO.Free", ctl)

	opEPQuery         = defOp("EP.Query", ctl)
	opEPModify        = defOp("EP.Modify", ctl)
	opEPGetStatus     = defOp("EP.GetStatus", ctl)
	opEPConnect       = defOp("EP.Connect", ctl)
	opEPDupConnect    = defOp("EP.DupConnect", ctl)
	opEPDisconnect    = defOp("EP.Disconnect", ctl)
	opEPReset         = defOp("EP.Reset", ctl)
	opEPFree          = defOp("EP.Free", ctl)
	opEPPostSend      = defOp("EP.PostSend", data)
	opEPPostSendInv   = defOp("EP.PostSendWithInvalidate", data)
	opEPPostRecv      = defOp("EP.PostRecv", data)
	opEPPostWrite     = defOp("EP.PostRDMAWrite", data)
	opEPPostRead      = defOp("EP.PostRDMARead", data)
	opEPPostReadToRMR = defOp("EP.PostRDMAReadToRMR", data)
	opEPRecvQuery     = defOp("EP.RecvQuery", ctl)
	opEPSetWatermark  = defOp("EP.SetWatermark", ctl)
	opPSPQuery        = defOp("PSP.Query", ctl)
	opPSPFree         = defOp("PSP.Free", ctl)
	opRSPQuery        = defOp("RSP.Query", ctl)
	opRSPFree         = defOp("RSP.Free", ctl)
	opCRQuery         = defOp("CR.Query", ctl)
	opCRAccept        = defOp("CR.Accept", ctl)
	opCRReject        = defOp("CR.Reject", ctl)
	opCRHandoff       = defOp("CR.Handoff", ctl)
	opLMRQuery        = defOp("LMR.Query", ctl)
	opLMRFree         = defOp("LMR.Free", ctl)
	opRMRQuery        = defOp("RMR.Query", ctl)
	opRMRBind         = defOp("RMR.Bind", data)
	opRMRFree         = defOp("RMR.Free", ctl)
	opSRQQuery        = defOp("SRQ.Query", ctl)
	opSRQPostRecv     = defOp("SRQ.PostRecv", data)
	opSRQResize       = defOp("SRQ.Resize", ctl)
	opSRQSetLW        = defOp("SRQ.SetLW", ctl)
	opSRQFree         = defOp("SRQ.Free", ctl)
)

// hooks is what the configuration switched on for one IA. It is set when
// the IA is opened and never changes, so the guards read it without
// synchronization.
type hooks struct {
	ia     string       // the IA's name, for the trace
	counts []opCount    // indexed by op; nil without "count"
	log    *slog.Logger // nil without "trace" or "trace-data"
	data   bool         // trace-data: log the data path too
}

// opCount is the count of one operation.
type opCount struct{ calls, errs atomic.Uint64 }

// newHooks returns the hooks the names of a configuration entry ask for,
// logging to l (nil: text on standard error); nil when none is asked for.
func newHooks(e IAEntry, l *slog.Logger) *hooks {
	if len(e.Hooks) == 0 {
		return nil
	}
	h := &hooks{ia: e.Name}
	for _, n := range e.Hooks {
		switch n {
		case hookCount:
			h.counts = make([]opCount, len(ops))
		case hookTraceData:
			h.data = true
			fallthrough
		case hookTrace:
			if l == nil {
				l = slog.New(slog.NewTextHandler(os.Stderr, nil))
			}
			h.log = l
		}
	}
	return h
}

// start returns the time a call of o starts if the call will be traced,
// and otherwise the zero time, which costs nothing to take.
func (h *hooks) start(o op) time.Time {
	if !h.traces(o) {
		return time.Time{}
	}
	return time.Now()
}

// traces reports whether calls of o are logged.
func (h *hooks) traces(o op) bool { return h.log != nil && (h.data || !ops[o].data) }

// done records the end of a call of o on the object of hdr g, started at
// t, that returned *err.
func (h *hooks) done(o op, g *hdr, t time.Time, err *error) {
	if h.counts != nil {
		c := &h.counts[o]
		c.calls.Add(1)
		if *err != nil {
			c.errs.Add(1)
		}
	}
	if !h.traces(o) {
		return
	}
	result := "DAT_SUCCESS"
	attrs := []slog.Attr{slog.String("ia", h.ia), slog.String("handle", g.name())}
	if e := *err; e != nil {
		result = "error"
		var de *api.Error
		if errors.As(e, &de) {
			result = de.Type.String()
			if de.Sub != api.NoSubtype {
				result += "(" + de.Sub.String() + ")"
			}
		}
		attrs = append(attrs, slog.String("result", result), slog.String("err", e.Error()))
	} else {
		attrs = append(attrs, slog.String("result", result))
	}
	attrs = append(attrs, slog.Duration("took", time.Since(t)))
	h.log.LogAttrs(context.Background(), slog.LevelInfo, ops[o].name, attrs...)
}

// nextHandleID numbers every object the guard layer wraps, IAs included,
// in one sequence for the whole process: two IAs open at once (two opens
// of one name among them) never show the same name in a trace or an
// error, as per-IA numbers would.
var nextHandleID atomic.Uint64

// name is how the trace and the guard's errors name a guarded object: its
// handle type and its number ("EP#3", "IA#1").
func (g *hdr) name() string {
	return g.typ.String() + "#" + strconv.FormatUint(g.id, 10)
}

// OpCount is how often an IA's consumer called one operation, and how
// many of those calls returned an error: what hooks = ["count"] collects.
// Errors include the ordinary ones, such as DAT_QUEUE_EMPTY from a
// Dequeue that found nothing and DAT_TIMEOUT_EXPIRED from a Wait.
type OpCount struct {
	Op     string // the interface and method, as "EP.PostSend"
	Calls  uint64
	Errors uint64
}

// Counts returns the calls counted so far on ia, an IA from Open whose
// configuration entry has hooks = ["count"]: one OpCount per operation
// called at least once, in a fixed order (the order of the api
// interfaces). It works after the IA is closed. Any other IA is
// ErrInvalidParameter.
func Counts(ia api.IA) ([]OpCount, error) {
	g, ok := ia.(*iaGuard)
	if !ok || g == nil {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg1, "not an IA opened through the registry")
	}
	if g.hooks == nil || g.hooks.counts == nil {
		return nil, api.Errorf(api.InvalidParameter, api.SubArg1,
			fmt.Sprintf("IA %q does not count its calls: its configuration entry needs hooks = [%q]", g.entry.Name, hookCount))
	}
	var out []OpCount
	for i := range g.hooks.counts {
		c := &g.hooks.counts[i]
		if n := c.calls.Load(); n > 0 {
			out = append(out, OpCount{Op: ops[i].name, Calls: n, Errors: c.errs.Load()})
		}
	}
	return out, nil
}
