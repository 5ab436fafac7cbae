package tcp

import (
	"context"
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

// TestCNOHandles calls the provider directly, without the registry's
// guard: a CNO that was freed, or belongs to another IA, is not a CNO that
// CreateEVD or ModifyCNO accepts.
func TestCNOHandles(t *testing.T) {
	open := func() api.IA {
		ia, err := Provider{}.Open(context.Background(), api.OpenParams{Params: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ia.Close(api.CloseAbrupt) })
		return ia
	}
	a, b := open(), open()
	bad := &api.Error{Type: api.InvalidHandle, Sub: api.SubHandleCNO}
	c, err := a.CreateCNO(nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := a.CreateEVD(4, c, api.EVDSoftware)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.CreateEVD(4, c, api.EVDSoftware); !errors.Is(err, bad) {
		t.Errorf("CreateEVD with another IA's CNO: %v", err)
	}
	if err := e.ModifyCNO(nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Free(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Query(); !errors.Is(err, bad) {
		t.Errorf("Query of a freed CNO: %v", err)
	}
	if _, err := a.CreateEVD(4, c, api.EVDSoftware); !errors.Is(err, bad) {
		t.Errorf("CreateEVD with a freed CNO: %v", err)
	}
	if err := e.ModifyCNO(c); !errors.Is(err, bad) {
		t.Errorf("ModifyCNO to a freed CNO: %v", err)
	}
}
