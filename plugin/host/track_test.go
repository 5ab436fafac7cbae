package host

import (
	"testing"

	"github.com/godat/godat/api"
)

// TestWorkQueueAddGuesses checks that add says when it had to forget a
// suppressed request it cannot know is done, and only then.
func TestWorkQueueAddGuesses(t *testing.T) {
	const limit = 4
	var q workQueue
	for i := range limit {
		if _, sure := q.add(api.Cookie(i), api.OpRDMAWrite, nil, true, limit); !sure {
			t.Fatalf("add %d of a queue below its limit was a guess", i)
		}
	}
	if _, sure := q.add(9, api.OpRDMAWrite, nil, true, limit); sure {
		t.Fatal("add to a queue full of suppressed requests forgot one and called that sure")
	}
	if q.r.Len() != limit {
		t.Fatalf("queue holds %d entries, want its limit %d", q.r.Len(), limit)
	}

	// A failed post is surely not outstanding: forgetting it is no guess.
	var f workQueue
	tok, _ := f.add(0, api.OpSend, nil, false, limit)
	f.failed(tok)
	for i := 1; i < limit; i++ {
		f.add(api.Cookie(i), api.OpSend, nil, false, limit)
	}
	if _, sure := f.add(9, api.OpSend, nil, false, limit); !sure {
		t.Fatal("add that forgot only a failed post was called a guess")
	}

	// A signalled completion retires everything before it, suppressed or
	// not, and leaves room that needs no guess.
	q.completeInOrder(9, api.OpRDMAWrite)
	if q.r.Len() != 0 {
		t.Fatalf("after the last entry completed the queue holds %d", q.r.Len())
	}
	if _, sure := q.add(10, api.OpRDMAWrite, nil, true, limit); !sure {
		t.Fatal("add to an emptied queue was a guess")
	}
}
