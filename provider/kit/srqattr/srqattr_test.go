package srqattr

import (
	"errors"
	"testing"

	"github.com/godat/godat/api"
)

func TestChecks(t *testing.T) {
	ok := api.SRQAttr{MaxRecvDTOs: 8, MaxRecvIOV: 2, LowWatermark: 8}
	if err := CheckCreate(ok, 8, 2); err != nil {
		t.Error(err)
	}
	for _, a := range []api.SRQAttr{
		{MaxRecvDTOs: 9, MaxRecvIOV: 2},
		{MaxRecvDTOs: 8, MaxRecvIOV: 0},
		{MaxRecvDTOs: 8, MaxRecvIOV: 2, LowWatermark: 9},
	} {
		if err := CheckCreate(a, 8, 2); !errors.Is(err, api.ErrInvalidParameter) {
			t.Errorf("CheckCreate(%+v) = %v", a, err)
		}
	}
	if err := CheckSize(0, 8); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("CheckSize(0) = %v", err)
	}
	if err := CheckResize(4, 4, 4); err != nil {
		t.Error(err)
	}
	if err := CheckResize(3, 4, 0); !errors.Is(err, api.ErrInvalidState) {
		t.Errorf("below posted: %v", err)
	}
	if err := CheckResize(3, 0, 4); !errors.Is(err, api.ErrInvalidState) {
		t.Errorf("below the watermark: %v", err)
	}
	if err := CheckLW(9, 8); !errors.Is(err, api.ErrInvalidParameter) {
		t.Errorf("CheckLW = %v", err)
	}
}

func TestCheckFree(t *testing.T) {
	if err := CheckFree(0); err != nil {
		t.Errorf("CheckFree of an unused SRQ: %v", err)
	}
	var de *api.Error
	if err := CheckFree(2); !errors.As(err, &de) || de.Type != api.InvalidState || de.Sub != api.SubStateSRQInUse {
		t.Errorf("CheckFree of an SRQ 2 EPs use: %v, want ErrInvalidState/SubStateSRQInUse", err)
	}
}
