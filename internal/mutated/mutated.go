// Package mutated plays a fuzz target's inputs, mutated at random, in a
// plain loop. Go's fuzzing engine measures coverage and runs a live
// connection's target at some hundreds of inputs a second; a loop without
// it runs ten times as many, so a find that needs hundreds of thousands
// of inputs shows there first (docs/decisions.md, "Hostile peers under
// fuzzing").
package mutated

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// maxCorpus bounds the inputs the loop keeps to mutate further.
const maxCorpus = 500

// An Edit is one random change to in, an input being mutated; corpus is
// what Play mutates inputs from. It returns the changed input (in itself,
// or a longer or shorter slice).
type Edit func(rng *rand.Rand, in []byte, corpus [][]byte) []byte

// SetByte sets a byte of in, anywhere, to a random value.
func SetByte(rng *rand.Rand, in []byte, _ [][]byte) []byte {
	if len(in) > 0 {
		in[rng.IntN(len(in))] = byte(rng.Uint32())
	}
	return in
}

// Play runs n inputs through run, each as a subtest. Each input is a
// copy of one of the corpus with one to eight edits, each chosen at random
// among edits. The corpus is the seeds at first, then also one input in
// four that was played, if it has at least minKeep bytes (up to maxCorpus
// inputs). Play logs its random seed; the first input that fails ends the
// loop and t, with the input in the message. run takes the random source
// for any choice of its own beside the input.
func Play(t *testing.T, n int, seeds [][]byte, minKeep int, edits []Edit,
	run func(t *testing.T, rng *rand.Rand, in []byte)) {
	t.Helper()
	seed := time.Now().UnixNano()
	t.Logf("random seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	corpus := seeds
	for range n {
		in := slices.Clone(corpus[rng.IntN(len(corpus))])
		for range rng.IntN(8) + 1 {
			in = edits[rng.IntN(len(edits))](rng, in, corpus)
		}
		if len(in) >= minKeep && len(corpus) < maxCorpus && rng.IntN(4) == 0 {
			corpus = append(corpus, in)
		}
		if !t.Run("input", func(t *testing.T) { run(t, rng, in) }) {
			t.Fatalf("input %x failed", in)
		}
	}
}
