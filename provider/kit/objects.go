package kit

import (
	"fmt"
	"iter"
	"strings"
	"sync"

	"github.com/godat/godat/api"
)

// Set is the table of one kind of object of an IA: the provider keeps one
// per kind it creates, under the lock that guards its IA. Its limit is
// the number of objects the IA reports it can hold (IAAttr.MaxEPs, say);
// 0 means no limit. A Set is not safe for concurrent use.
type Set[T comparable] struct {
	kind  api.HandleType
	limit int
	m     map[T]struct{}
}

// NewSet returns an empty table of objects of kind, holding at most limit
// (0: no limit).
func NewSet[T comparable](kind api.HandleType, limit int) Set[T] {
	return Set[T]{kind: kind, limit: limit, m: map[T]struct{}{}}
}

// Room fails with ErrInsufficientResources when the table is full: a
// create asks it before it makes anything, and Adds the object once made.
func (s *Set[T]) Room() error {
	if s.limit > 0 && len(s.m) >= s.limit {
		return api.Errorf(api.InsufficientResources, api.NoSubtype,
			fmt.Sprintf("the IA has the maximum number of %ss (%d)", s.kind, s.limit))
	}
	return nil
}

// Add puts x in the table. It does not look at the limit: Room does.
func (s *Set[T]) Add(x T) { s.m[x] = struct{}{} }

// Put is Room and Add for a create whose object costs nothing to make
// before it knows there is room: it adds x to s and returns it as I, the
// api type the create returns; when s is full it returns Room's error and
// the zero I (a nil interface, never a typed nil).
func Put[I any, T comparable](s *Set[T], x T) (I, error) {
	if err := s.Room(); err != nil {
		var none I
		return none, err
	}
	s.Add(x)
	return any(x).(I), nil
}

// Create is Put with mu, the lock that guards s, held: the whole of a
// create whose object needs nothing else of the IA (dat_pz_create(3DAT),
// dat_rmr_create(3DAT)).
func Create[I any, T comparable](mu sync.Locker, s *Set[T], x T) (I, error) {
	mu.Lock()
	defer mu.Unlock()
	return Put[I](s, x)
}

// Remove takes x out of the table; it reports whether x was in it.
func (s *Set[T]) Remove(x T) bool {
	_, ok := s.m[x]
	delete(s.m, x)
	return ok
}

// Has reports whether x is in the table.
func (s *Set[T]) Has(x T) bool {
	_, ok := s.m[x]
	return ok
}

// Len returns how many objects the table holds.
func (s *Set[T]) Len() int { return len(s.m) }

// Kind returns the handle type of the table's objects.
func (s *Set[T]) Kind() api.HandleType { return s.kind }

// All yields each object, in no particular order; the loop may Remove
// the object it is given.
func (s *Set[T]) All() iter.Seq[T] {
	return func(yield func(T) bool) {
		for x := range s.m {
			if !yield(x) {
				return
			}
		}
	}
}

// Each calls f with each object, in no particular order; f may Remove
// the object it is given. It is All for the loops that only call one
// method of each object, as an IA's Close does.
func (s *Set[T]) Each(f func(T)) {
	for x := range s.m {
		f(x)
	}
}

// Clear empties the table.
func (s *Set[T]) Clear() { clear(s.m) }

// Remover is the table an object leaves when it is freed: a Set, or a
// table that embeds one.
type Remover[T any] interface{ Remove(T) bool }

// Free is the whole of an object's Free (dat_pz_free(3DAT),
// dat_psp_free(3DAT) and the like) in a provider whose lock mu guards
// the IA's tables: with mu held it runs check, which may refuse the free
// (an SRQ that an EP still uses) and then nothing changes, then release,
// which undoes what the object holds, and takes x out of table. check and
// release may be nil.
func Free[T any](mu sync.Locker, table Remover[T], x T, check func() error, release func()) error {
	mu.Lock()
	defer mu.Unlock()
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if release != nil {
		release()
	}
	table.Remove(x)
	return nil
}

// Counted is what InUse reads of a table: a Set of any object type.
type Counted interface {
	Len() int
	Kind() api.HandleType
}

// InUse decides a graceful dat_ia_close(3DAT): nil when every table is
// empty, otherwise ErrInvalidState with SubStateIAInUse and a message that
// says what the IA still holds ("2 EP, 1 PZ"). The async EVD, which the IA
// owns, belongs in none of the tables.
func InUse(tables ...Counted) error {
	var parts []string
	n := 0
	for _, t := range tables {
		if k := t.Len(); k > 0 {
			n += k
			parts = append(parts, fmt.Sprintf("%d %s", k, t.Kind()))
		}
	}
	if n == 0 {
		return nil
	}
	return api.Errorf(api.InvalidState, api.SubStateIAInUse,
		fmt.Sprintf("the IA still has %d object(s): %s", n, strings.Join(parts, ", ")))
}

// PZArg returns the provider's own PZ, of type P, that x names, for a
// call that creates an object in it: nil, or a PZ of another provider, is
// ErrInvalidHandle. The guard refuses both first; PZArg keeps a call that
// reaches the provider without it from using a nil pointer.
func PZArg[P comparable](x api.PZ) (P, error) {
	z, ok := x.(P)
	var none P
	if !ok || z == none {
		return none, api.Errorf(api.InvalidHandle, api.SubHandlePZ, "the PZ handle is nil or not this provider's")
	}
	return z, nil
}

// PZ is the part of a protection zone (dat_pz_create(3DAT)) that every
// software provider writes alike: the handle and its IA, with HandleType
// and Query. A provider's PZ type embeds it and adds what is its own,
// CreateRMR and Free.
type PZ[I api.IA] struct {
	api.ContextSlot
	IA I
}

// HandleType reports HandlePZ (dat_get_handle_type(3DAT)).
func (z *PZ[I]) HandleType() api.HandleType { return api.HandlePZ }

// Query returns the PZ's IA (dat_pz_query(3DAT)).
func (z *PZ[I]) Query() (api.PZParam, error) { return api.PZParam{IA: z.IA}, nil }
