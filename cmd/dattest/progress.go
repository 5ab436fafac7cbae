package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// progressEvery is how often a running benchmark reports on stderr.
const progressEvery = 500 * time.Millisecond

// progress prints a running benchmark's progress line on w every
// progressEvery: what runs, the iterations done and the current rate.
// On a terminal the line is rewritten in place (\r); elsewhere each report
// is a line of its own. The loop being measured only does an atomic add
// per iteration. All methods of a nil *progress do nothing.
type progress struct {
	w   io.Writer
	tty bool

	label string
	size  int
	total int
	bw    bool
	n     atomic.Int64
	t0    atomic.Int64 // UnixNano of the timed start; 0 while warming up
	stop  chan struct{}
	wg    sync.WaitGroup
	shown bool
	line  []byte // report's buffer
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

// begin starts reporting on a row: label names it, total is the number of
// timed iterations, bw says whether the rate is a throughput of size-byte
// messages (else a one-way latency of round trips).
func (p *progress) begin(label string, size, total int, bw bool) {
	if p == nil {
		return
	}
	p.label, p.size, p.total, p.bw, p.shown = label, size, total, bw, false
	p.n.Store(0)
	p.t0.Store(0)
	p.stop = make(chan struct{})
	p.wg.Add(1)
	go p.run()
}

// start marks the end of the warm-up: counting and timing start now.
func (p *progress) start() {
	if p == nil {
		return
	}
	p.n.Store(0)
	p.t0.Store(time.Now().UnixNano())
}

// add counts k finished iterations.
func (p *progress) add(k int) {
	if p != nil {
		p.n.Add(int64(k))
	}
}

// end stops reporting and, on a terminal, clears the line.
func (p *progress) end() {
	if p == nil || p.stop == nil {
		return
	}
	close(p.stop)
	p.wg.Wait()
	p.stop = nil
	if p.tty && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}

func (p *progress) run() {
	defer p.wg.Done()
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.report()
		}
	}
}

// report writes the progress line. It reuses one buffer, so that the
// reports, whose number grows with the run's duration, add no allocations
// to the process while the benchmark's own loop is measured.
func (p *progress) report() {
	t0, n := p.t0.Load(), p.n.Load()
	b := p.line[:0]
	if p.tty {
		b = append(b, "\r\033[K"...)
	}
	b = append(b, p.label...)
	if t0 == 0 {
		b = append(b, ": warming up"...)
	} else {
		b = append(b, ": "...)
		b = strconv.AppendInt(b, n, 10)
		b = append(b, '/')
		b = strconv.AppendInt(b, int64(p.total), 10)
		b = append(b, " iterations, "...)
		switch el := time.Since(time.Unix(0, t0)); {
		case n == 0:
			b = append(b, '-')
		case p.bw:
			b = strconv.AppendFloat(b, float64(n)*float64(p.size)/el.Seconds()/1e9, 'g', 3, 64)
			b = append(b, " GB/s"...)
		default:
			b = strconv.AppendFloat(b, float64(el.Microseconds())/float64(2*n), 'g', 3, 64)
			b = append(b, " us one-way"...)
		}
	}
	if !p.tty {
		b = append(b, '\n')
	}
	p.line = b
	p.shown = true
	p.w.Write(b)
}
