// Package ring is a growable FIFO of slots that keeps and reuses the
// storage of removed elements, so that a queue of work requests holding
// slices (IOVs) stops allocating once it has reached its working size.
//
// It is the queue behind receive queues, shared receive queues and blocked
// request queues of the providers. It is not safe for concurrent use; the
// owner serialises access.
package ring

// Ring is a FIFO of T. The zero value is an empty ring ready for use.
//
// PushBack hands out a pointer to the slot to fill: the slot still holds
// whatever the element that last used it held, so the caller can reuse its
// slices (s.iov = append(s.iov[:0], ...)). Pointers returned by PushBack,
// Front and At are valid until the next PushBack.
type Ring[T any] struct {
	buf  []T
	head int
	n    int
}

// Len returns the number of queued elements.
func (r *Ring[T]) Len() int { return r.n }

// PushBack appends a slot at the back and returns it for the caller to fill.
// The ring doubles its storage when full; that is the only allocation.
func (r *Ring[T]) PushBack() *T {
	if r.n == len(r.buf) {
		r.grow()
	}
	i := r.index(r.n)
	r.n++
	return &r.buf[i]
}

// Front returns the oldest element, or nil if the ring is empty.
func (r *Ring[T]) Front() *T {
	if r.n == 0 {
		return nil
	}
	return &r.buf[r.head]
}

// At returns the i-th element from the front (0 is the front). It panics if
// i is out of range, like a slice index.
func (r *Ring[T]) At(i int) *T {
	if i < 0 || i >= r.n {
		panic("ring: index out of range")
	}
	return &r.buf[r.index(i)]
}

// PopFront removes the front element. Its slot keeps its contents for reuse
// by a later PushBack; the caller clears fields that must not be retained.
// It does nothing on an empty ring.
func (r *Ring[T]) PopFront() {
	if r.n == 0 {
		return
	}
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
}

// Clear removes every element, keeping the storage.
func (r *Ring[T]) Clear() {
	r.head, r.n = 0, 0
}

func (r *Ring[T]) index(i int) int {
	j := r.head + i
	if j >= len(r.buf) {
		j -= len(r.buf)
	}
	return j
}

func (r *Ring[T]) grow() {
	n := 2 * len(r.buf)
	if n == 0 {
		n = 8
	}
	nb := make([]T, n)
	// Move the live elements to the front in order, then the free slots,
	// so that their storage is reused later.
	k := copy(nb, r.buf[r.head:])
	copy(nb[k:], r.buf[:r.head])
	r.buf = nb
	r.head = 0
}
