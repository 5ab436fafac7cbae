package registry

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"log/slog"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/syncbuf"
)

// hookedRegistry is testRegistry's fake provider under IAs with hooks.
func hookedRegistry() *Registry {
	return New(&Config{File: "test", IAs: []IAEntry{
		{Name: "counted", Provider: "guardtest", ThreadSafe: true, Hooks: []string{hookCount}},
		{Name: "traced", Provider: "guardtest", ThreadSafe: true, Hooks: []string{hookTrace}},
		{Name: "all", Provider: "guardtest", ThreadSafe: true, Hooks: []string{hookTraceData, hookCount}},
	}})
}

// TestGuardHooksCoverEveryCall reads the guard's source: every exported
// method of a guard type (but HandleType, which cannot fail and reaches
// no provider) must open with the hooks statement, or hand its whole
// call to one of the hooked helpers (simple, query, free), naming the
// operation of its own interface and method; and every operation must be
// used exactly once. A method added without its hook fails here.
func TestGuardHooksCoverEveryCall(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("guard*.go")
	if err != nil {
		t.Fatal(err)
	}
	hooksFile, err := parser.ParseFile(fset, "hooks.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	opName := map[string]string{} // op variable → operation name
	ast.Inspect(hooksFile, func(n ast.Node) bool {
		vs, ok := n.(*ast.ValueSpec)
		if !ok || len(vs.Values) != 1 {
			return true
		}
		if c, ok := vs.Values[0].(*ast.CallExpr); ok && len(c.Args) == 2 {
			if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "defOp" {
				name, _ := strconv.Unquote(c.Args[0].(*ast.BasicLit).Value)
				opName[vs.Names[0].Name] = name
			}
		}
		return true
	})
	if len(opName) != len(ops) {
		t.Fatalf("read %d operations from hooks.go, the package has %d", len(opName), len(ops))
	}
	iface := map[string]string{"iaGuard": "IA", "pzGuard": "PZ", "evdGuard": "EVD", "cnoGuard": "CNO", "epGuard": "EP",
		"pspGuard": "PSP", "rspGuard": "RSP", "crGuard": "CR", "lmrGuard": "LMR", "rmrGuard": "RMR", "srqGuard": "SRQ", "hdr": "Object"}
	used := map[string]int{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || !fd.Name.IsExported() || fd.Name.Name == "HandleType" {
				continue
			}
			star, ok := fd.Recv.List[0].Type.(*ast.StarExpr)
			if !ok {
				continue
			}
			typ := star.X.(*ast.Ident).Name
			want := iface[typ] + "." + fd.Name.Name
			if iface[typ] == "" {
				continue
			}
			op := hookOp(fd)
			switch {
			case op == "":
				t.Errorf("%s: %s does not open with the hooks statement", fset.Position(fd.Pos()), want)
			case opName[op] != want:
				t.Errorf("%s: %s is hooked as %s (%q)", fset.Position(fd.Pos()), want, op, opName[op])
			}
			used[op]++
		}
	}
	for v, name := range opName {
		if used[v] != 1 {
			t.Errorf("operation %s (%s) is hooked by %d methods, want 1", v, name, used[v])
		}
	}
}

// hookedHelpers are the guard helpers that take the operation as an
// argument and run the hooks themselves, with where the argument is.
var hookedHelpers = map[string]int{"simple": 0, "query": 1, "free": 1}

// hookOp returns the operation variable that fd's hooks statement names,
// or "" if fd does not open with one:
//
//	if h := x.hooks; h != nil { defer h.done(op, g, h.start(op), &err) }
//
// A method whose first statement returns, or assigns to err, the result
// of a hooked helper names the operation it passes.
func hookOp(fd *ast.FuncDecl) string {
	if fd.Body == nil || len(fd.Body.List) == 0 {
		return ""
	}
	if op := helperOp(fd.Body.List[0]); op != "" {
		return op
	}
	is, ok := fd.Body.List[0].(*ast.IfStmt)
	if !ok || is.Init == nil || len(is.Body.List) != 1 {
		return ""
	}
	as, ok := is.Init.(*ast.AssignStmt)
	if !ok || len(as.Rhs) != 1 {
		return ""
	}
	if sel, ok := as.Rhs[0].(*ast.SelectorExpr); !ok || sel.Sel.Name != "hooks" {
		return ""
	}
	ds, ok := is.Body.List[0].(*ast.DeferStmt)
	if !ok || len(ds.Call.Args) != 4 {
		return ""
	}
	if sel, ok := ds.Call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "done" {
		return ""
	}
	id, ok := ds.Call.Args[0].(*ast.Ident)
	if !ok {
		return ""
	}
	// The start time is taken for the same operation.
	st, ok := ds.Call.Args[2].(*ast.CallExpr)
	if !ok || len(st.Args) != 1 {
		return ""
	}
	if sid, ok := st.Args[0].(*ast.Ident); !ok || sid.Name != id.Name {
		return ""
	}
	return id.Name
}

// helperOp returns the operation a statement "return helper(..., op,
// ...)" or "err = helper(..., op, ...)" passes to a hooked helper, or "".
func helperOp(st ast.Stmt) string {
	var e ast.Expr
	switch s := st.(type) {
	case *ast.ReturnStmt:
		if len(s.Results) != 1 {
			return ""
		}
		e = s.Results[0]
	case *ast.AssignStmt:
		if len(s.Lhs) != 1 || len(s.Rhs) != 1 {
			return ""
		}
		if id, ok := s.Lhs[0].(*ast.Ident); !ok || id.Name != "err" {
			return ""
		}
		e = s.Rhs[0]
	default:
		return ""
	}
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return ""
	}
	var name string
	switch f := call.Fun.(type) {
	case *ast.Ident:
		name = f.Name
	case *ast.SelectorExpr:
		name = f.Sel.Name
	}
	at, ok := hookedHelpers[name]
	if !ok || len(call.Args) <= at {
		return ""
	}
	if id, ok := call.Args[at].(*ast.Ident); ok && strings.HasPrefix(id.Name, "op") {
		return id.Name
	}
	return ""
}

// openHooked opens IA name of hookedRegistry with an EP whose queues
// feed one EVD, through the guard calls IA.CreatePZ, IA.CreateEVD and
// IA.CreateEP.
func openHooked(t *testing.T, name string, opts ...OpenOption) (api.IA, api.EVD, api.EP) {
	t.Helper()
	ia, err := hookedRegistry().Open(context.Background(), name, opts...)
	if err != nil {
		t.Fatal(err)
	}
	pz, _ := ia.CreatePZ()
	evd, _ := ia.CreateEVD(8, nil, api.EVDDTO)
	ep, err := ia.CreateEP(pz, evd, evd, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ia, evd, ep
}

func TestHooksCount(t *testing.T) {
	ia, evd, ep := openHooked(t, "counted")
	var ev api.Event
	for range 3 {
		if err := ep.PostRDMAReadToRMR(api.RMRTriplet{}, 1, api.RMRTriplet{}, 0); err != nil {
			t.Fatal(err)
		}
		evd.Dequeue(&ev) // empty: DAT_QUEUE_EMPTY counts as an error
	}
	if _, err := ia.CreateEVD(0, nil, api.EVDDTO); err == nil { // refused by the guard
		t.Fatal("CreateEVD of queue length 0 succeeded")
	}
	n := testing.AllocsPerRun(100, func() {
		ep.PostRDMAReadToRMR(api.RMRTriplet{}, 1, api.RMRTriplet{}, 0)
		evd.Dequeue(&ev)
	})
	if n != 0 {
		t.Errorf("a counted post and dequeue allocated %v times", n)
	}
	if err := ia.Close(api.CloseAbrupt); err != nil {
		t.Fatal(err)
	}
	got, err := Counts(ia)
	if err != nil {
		t.Fatal(err)
	}
	want := []OpCount{
		{"IA.Close", 1, 0}, {"IA.CreatePZ", 1, 0}, {"IA.CreateEVD", 2, 1}, {"IA.CreateEP", 1, 0},
		{"EVD.Dequeue", 3 + 101, 3 + 101}, {"EP.PostRDMAReadToRMR", 3 + 101, 0}, // AllocsPerRun(100) runs 101 times
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Counts after Close =\n %v\nwant\n %v", got, want)
	}

	plain, err := testRegistry().Open(context.Background(), "g")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close(api.CloseAbrupt)
	if _, err := Counts(plain); !errors.Is(err, api.ErrInvalidParameter) || !strings.Contains(err.Error(), `hooks = ["count"]`) {
		t.Fatalf("Counts of an IA without the count hook: %v", err)
	}
	if _, err := Counts(nil); !errors.Is(err, api.ErrInvalidParameter) {
		t.Fatalf("Counts(nil): %v", err)
	}
}

// TestHooksTrace checks what the trace hooks log: one record per call,
// naming the operation, the IA, the handle and the DAT result; the data
// path only under trace-data.
func TestHooksTrace(t *testing.T) {
	for _, tc := range []struct {
		ia   string
		data bool
	}{{"traced", false}, {"all", true}} {
		t.Run(tc.ia, func(t *testing.T) {
			var out syncbuf.Buffer
			l := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey || a.Key == "took" {
						return slog.Attr{}
					}
					return a
				}}))
			ia, evd, ep := openHooked(t, tc.ia, WithTraceLogger(l))
			ep.PostRDMAReadToRMR(api.RMRTriplet{}, 1, api.RMRTriplet{}, 0)
			var ev api.Event
			evd.Dequeue(&ev)
			ia.CreateEVD(0, nil, api.EVDDTO)
			ia.Close(api.CloseAbrupt)
			log := out.String()
			iaName := ia.(*iaGuard).name()
			for _, line := range []string{
				`level=INFO msg=IA.CreatePZ ia=` + tc.ia + ` handle=` + iaName + ` result=DAT_SUCCESS`,
				`msg=IA.CreateEP ia=` + tc.ia + ` handle=` + iaName + ` result=DAT_SUCCESS`,
				`msg=IA.CreateEVD ia=` + tc.ia + ` handle=` + iaName + ` result=DAT_INVALID_PARAMETER(DAT_INVALID_ARG2) err=`,
				`msg=IA.Close ia=` + tc.ia + ` handle=` + iaName + ` result=DAT_SUCCESS`,
			} {
				if !strings.Contains(log, line) {
					t.Errorf("trace lacks %q:\n%s", line, log)
				}
			}
			epName := ep.(*epGuard).name()
			for _, line := range []string{
				`msg=EP.PostRDMAReadToRMR ia=` + tc.ia + ` handle=` + epName + ` result=DAT_SUCCESS`,
				`msg=EVD.Dequeue ia=` + tc.ia + ` handle=EVD#`,
			} {
				if strings.Contains(log, line) != tc.data {
					t.Errorf("trace has %q: %v, want %v:\n%s", line, !tc.data, tc.data, log)
				}
			}
		})
	}
}

// TestHooksTraceNamesAcrossIAs opens one configured IA twice, tracing
// both to one log: every handle, the IAs' own included, has a name of
// its own, so the trace tells the two apart.
func TestHooksTraceNamesAcrossIAs(t *testing.T) {
	var out syncbuf.Buffer
	l := slog.New(slog.NewTextHandler(&out, nil))
	ia1, evd1, ep1 := openHooked(t, "traced", WithTraceLogger(l))
	ia2, evd2, ep2 := openHooked(t, "traced", WithTraceLogger(l))
	async1, _ := ia1.AsyncEVD()
	async2, _ := ia2.AsyncEVD()
	seen := map[string]bool{}
	for _, o := range []guarded{ia1.(*iaGuard), evd1.(*evdGuard), ep1.(*epGuard), async1.(*evdGuard),
		ia2.(*iaGuard), evd2.(*evdGuard), ep2.(*epGuard), async2.(*evdGuard)} {
		n := o.header().name()
		if seen[n] {
			t.Errorf("two objects are both named %s", n)
		}
		seen[n] = true
	}
	for _, ia := range []api.IA{ia1, ia2} {
		if err := ia.Close(api.CloseAbrupt); err != nil {
			t.Fatal(err)
		}
	}
	var closes []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, "msg=IA.Close ") {
			closes = append(closes, line[strings.Index(line, "handle="):])
		}
	}
	if len(closes) != 2 || closes[0] == closes[1] {
		t.Errorf("the two IAs' closes are traced as %q:\n%s", closes, out.String())
	}
}

func TestHooksFromTOML(t *testing.T) {
	cfg := mustParse(t, "h.toml", []byte("[[ia]]\nname = \"a\"\nprovider = \"loopback\"\napi_version = \"u2.0\"\nhooks = [\"trace-data\", \"count\"]\n"))
	if got := cfg.IAs[0].Hooks; !reflect.DeepEqual(got, []string{hookTraceData, hookCount}) {
		t.Fatalf("Hooks = %q", got)
	}
}
