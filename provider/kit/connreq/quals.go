package connreq

import (
	"fmt"

	"github.com/godat/godat/api"
)

// Quals is the table of the connection qualifiers service points listen
// on, for a provider whose qualifiers are its own rather than a
// transport's ports (an in-process fabric): which point listens on each,
// and a free one for dat_psp_create_any(3DAT). P is the provider's service
// point type, whose zero value is "none". The provider's lock guards it.
type Quals[P comparable] struct {
	on          map[api.ConnQual]P
	first, next api.ConnQual
}

// NewQuals returns an empty table that picks free qualifiers from first
// up.
func NewQuals[P comparable](first api.ConnQual) Quals[P] {
	return Quals[P]{on: map[api.ConnQual]P{}, first: first, next: first}
}

// At returns the point that listens on q, or the zero P.
func (t *Quals[P]) At(q api.ConnQual) P { return t.on[q] }

// Check fails with ErrConnQualInUse while a point listens on q
// (dat_psp_create(3DAT), dat_rsp_create(3DAT)).
func (t *Quals[P]) Check(q api.ConnQual) error {
	if _, ok := t.on[q]; ok {
		return api.Errorf(api.ConnQualInUse, api.NoSubtype, fmt.Sprintf("connection qualifier %d is in use", q))
	}
	return nil
}

// Free returns a qualifier no point listens on, the next from first up
// (wrapping around), looking at most tries of them; after that it fails
// with ErrConnQualUnavailable (dat_psp_create_any(3DAT)).
func (t *Quals[P]) Free(tries int) (api.ConnQual, error) {
	for range tries {
		q := t.next
		if t.next++; t.next == 0 {
			t.next = t.first
		}
		if _, ok := t.on[q]; !ok {
			return q, nil
		}
	}
	return 0, api.Errorf(api.ConnQualUnavailable, api.NoSubtype, "no free connection qualifier")
}

// Listen lists p on q, which Check or Free found free.
func (t *Quals[P]) Listen(q api.ConnQual, p P) { t.on[q] = p }

// Unlisten ends p's listening on q, if it still listens there.
func (t *Quals[P]) Unlisten(q api.ConnQual, p P) {
	if t.on[q] == p {
		delete(t.on, q)
	}
}
