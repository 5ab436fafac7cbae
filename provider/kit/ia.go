package kit

import (
	"sync"

	"github.com/godat/godat/api"
)

// ErrIAClosed is the error of a call on an IA that is closed.
var ErrIAClosed = api.Errorf(api.InvalidHandle, api.SubHandleIA, "IA is closed")

// IA is the part of an IA object every provider writes alike: its handle
// type and consumer context, its async EVD, whether it is closed, and the
// start of dat_ia_close(3DAT). A provider's IA type embeds it and calls
// InitIA once its async EVD exists; the provider's lock, given to InitIA,
// guards it.
type IA struct {
	api.ContextSlot
	mu     sync.Locker
	async  api.EVD
	closed bool
}

// InitIA sets the lock that guards the IA and its async EVD.
func (b *IA) InitIA(mu sync.Locker, async api.EVD) { b.mu, b.async = mu, async }

// HandleType reports HandleIA (dat_get_handle_type(3DAT)).
func (b *IA) HandleType() api.HandleType { return api.HandleIA }

// AsyncEVD returns the IA's async EVD, which its Open made and its Close
// destroys (dat_ia_open(3DAT)); ErrIAClosed once it is closed.
func (b *IA) AsyncEVD() (api.EVD, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil, ErrIAClosed
	}
	return b.async, nil
}

// Closed reports whether the IA's Close has begun. The lock is held.
func (b *IA) Closed() bool { return b.closed }

// BeginClose is the start of the IA's Close, with the lock held: it fails
// with ErrIAClosed on a closed IA, and for CloseGraceful with InUse's
// error while any of tables holds an object; otherwise it marks the IA
// closed, and the provider goes on to destroy what it holds.
func (b *IA) BeginClose(flags api.CloseFlags, tables ...Counted) error {
	if b.closed {
		return ErrIAClosed
	}
	if flags == api.CloseGraceful {
		if err := InUse(tables...); err != nil {
			return err
		}
	}
	b.closed = true
	return nil
}

// Live takes the lock to report whether the IA is still open: nil before
// its Close begins, ErrIAClosed after. It is for calls that need nothing
// of the IA but that (dat_ia_query(3DAT)); the lock is released on return.
func (b *IA) Live() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrIAClosed
	}
	return nil
}

// WhileOpen runs f with the lock held if the IA is open and returns f's
// error; once the IA's Close has begun it returns ErrIAClosed without
// running f. It is for the calls that create an object of the IA, which
// must not add to an IA whose Close has emptied its tables.
func (b *IA) WhileOpen(f func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrIAClosed
	}
	return f()
}

// LockClose takes the lock and begins the IA's Close as BeginClose does.
// On nil it returns with the lock held, for the provider to destroy what
// the IA holds and then release it; on an error the lock is released and
// the IA is as it was.
func (b *IA) LockClose(flags api.CloseFlags, tables ...Counted) error {
	b.mu.Lock()
	if err := b.BeginClose(flags, tables...); err != nil {
		b.mu.Unlock()
		return err
	}
	return nil
}

// Clearable is a table a closing IA empties once it has destroyed what
// the table holds: a Set, or any table with a Clear method.
type Clearable interface{ Clear() }

// ClearAll empties every table, the end of an abrupt dat_ia_close(3DAT)
// after the provider has destroyed their objects.
func ClearAll(tables ...Clearable) {
	for _, t := range tables {
		t.Clear()
	}
}
