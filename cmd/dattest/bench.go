package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/internal/units"
)

// benchParams says what to measure.
type benchParams struct {
	ops   []string // "lat", "bw", "read", "wlat", "wlat-suppress", "wlat-watch"
	sizes []int
	iters int
	warm  int // untimed iterations before the timed ones
	poll  bool
}

func (p benchParams) mode() string {
	if p.poll {
		return "poll"
	}
	return "wait"
}

// warmup is the number of untimed iterations before the timed ones: half
// as many, at least 10 and at most 1000. What it has to outlast is a
// transient of the process, not of the link. When a process leaves a
// blocking wait (the control exchange that starts every run), Go's
// runtime monitor wakes every 20 µs for about a millisecond and then
// backs off over some 20 ms to one wake in 10 ms. Each wake takes the
// CPU from the spinning benchmark loop for a moment, and under emulation
// (the rxe VM) for tens of microseconds, and there a warm-up of a tenth
// (200 of 2000 round trips) leaves a cluster of such stalls in the timed
// part.
func warmup(iters int) int { return min(max(iters/2, 10), 1000) }

// benchRow is one row of the benchmark table and of its JSON output.
// Latency rows (ops "lat" and the wlat ones) give the one-way latency in microseconds (half
// the round trip) and ratio = godat ÷ raw (> 1: godat is slower);
// bandwidth rows (ops "bw" and "read") give GB/s (10^9 bytes per second)
// and ratio = godat ÷ raw (> 1: godat is faster). Unit says which ("us"
// or "GB/s").
type benchRow struct {
	Op    string  `json:"op"`
	Size  int     `json:"size"`
	Mode  string  `json:"mode"`
	Godat float64 `json:"godat"`
	Raw   float64 `json:"raw"`
	Ratio float64 `json:"ratio"`
	Unit  string  `json:"unit"`
	Iters int     `json:"iters"`
}

// maxWindow bounds the RDMA writes a bandwidth run, and the RDMA reads a
// read run, keeps outstanding.
const maxWindow = 16

// runBench measures every op and size: godat, then the raw TCP baseline
// between the same two processes.
func runBench(ctx context.Context, cfg clientConfig, p benchParams) (rows []benchRow, err error) {
	n, err := openNode(ctx, cfg.reg, cfg.ia)
	if err != nil {
		return nil, err
	}
	defer n.close()
	maxSize := 0
	for _, s := range p.sizes {
		maxSize = max(maxSize, s)
	}
	dctx, cancel := context.WithTimeout(ctx, stepTimeout)
	c, err := dial(dctx, n, cfg, sessionBench, maxSize)
	cancel()
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := c.close(ctx); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			err = c.idleHint(err)
		}
	}()
	var w remoteWindow
	if slices.ContainsFunc(p.ops, func(op string) bool { return op == "bw" || op == "read" || isWLat(op) }) {
		if w, err = c.window(ctx); err != nil {
			return nil, err
		}
	}
	// The read run's destination: three regions of the largest size, for
	// the first timed read, the last one and all those in between.
	var dst *buf
	if slices.Contains(p.ops, "read") {
		if dst, err = newBuf(n, 3*maxSize, api.MemPrivLocalRead|api.MemPrivLocalWrite); err != nil {
			return nil, err
		}
		defer func() {
			if ferr := dst.free(); err == nil && ferr != nil {
				err = ferr
			}
		}()
	}
	prog := newProgress(cfg.stderr)
	raw := rawClient{addr: cfg.rawAddr(c.rawPort), prog: prog}
	warm := p.warm
	if warm > 0 {
		if err := c.prime(ctx, raw, min(slices.Min(p.sizes), 4<<10), p.poll); err != nil {
			return nil, err
		}
	}
	for _, op := range p.ops {
		for _, size := range p.sizes {
			row := benchRow{Op: op, Size: size, Mode: p.mode(), Iters: p.iters}
			label := fmt.Sprintf("%s %s %s", op, sizeName(size), p.mode())
			switch op {
			case "lat", "wlat", "wlat-suppress", "wlat-watch":
				// wlat is an RDMA-write ping-pong, lat a send/recv one;
				// both against the raw TCP ping-pong.
				if err := c.checkSize(size, isWLat(op)); err != nil {
					return nil, err
				}
				if isWLat(op) && !p.poll {
					return nil, fmt.Errorf("%s: an RDMA-write ping-pong runs in poll mode only", label)
				}
				d, r, err := godatAndRaw(prog, label, size, p.iters, false, func() (time.Duration, error) {
					if isWLat(op) {
						return c.wlat(ctx, w, size, warm, p.iters, wlatModeOf(op), prog)
					}
					return c.lat(ctx, size, warm, p.iters, p.poll, prog)
				}, func() (time.Duration, error) { return raw.lat(ctx, size, warm, p.iters, p.poll) })
				if err != nil {
					return nil, err
				}
				row.Unit, row.Godat, row.Raw = "us", us(d), us(r)
				row.Ratio = ratio(row.Godat, row.Raw)
			case "bw":
				if err := c.checkSize(size, true); err != nil {
					return nil, err
				}
				g, r, err := godatAndRaw(prog, label, size, p.iters, true,
					func() (float64, error) { return c.bw(ctx, w, size, warm, p.iters, p.poll, prog) },
					func() (float64, error) { return raw.bw(ctx, size, warm, p.iters, p.poll) })
				if err != nil {
					return nil, err
				}
				row.Unit, row.Godat, row.Raw = "GB/s", g/1e9, r/1e9
				row.Ratio = ratio(row.Godat, row.Raw)
			case "read":
				if err := c.checkSize(size, true); err != nil {
					return nil, err
				}
				win, seed := c.readWindow(w), rand.Uint64()
				if err := c.fill(ctx, 0, size, seed); err != nil {
					return nil, fmt.Errorf("%s godat: %w", label, err)
				}
				g, r, err := godatAndRaw(prog, label, size, p.iters, true,
					func() (float64, error) { return c.read(ctx, w, dst, size, win, seed, warm, p.iters, p.poll, prog) },
					func() (float64, error) { return raw.read(ctx, size, win, warm, p.iters, p.poll) })
				if err != nil {
					return nil, err
				}
				row.Unit, row.Godat, row.Raw = "GB/s", g/1e9, r/1e9
				row.Ratio = ratio(row.Godat, row.Raw)
			}
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// primeFor is how long prime runs each of its two ping-pongs, in chunks
// of round trips that start at 100 and double up to primeChunk (so that a
// slow link, rxe under emulation, is not held long past primeFor).
const (
	primeFor   = 250 * time.Millisecond
	primeChunk = 2000
)

// prime runs, untimed, a ping-pong of size-byte messages first over
// godat, then over raw TCP, each for primeFor. The first timed phase of a
// fresh client is slow whichever path runs it (docs/performance.md), and
// the rows run godat first: without priming, the first row would charge
// that to godat alone. A per-row warm-up of a few thousand round trips
// does not cover it.
func (c *client) prime(ctx context.Context, raw rawClient, size int, poll bool) error {
	quiet := raw
	quiet.prog = nil // (no row is being shown)
	paths := []struct {
		name string
		run  func(n int) error
	}{
		{"godat", func(n int) error { _, err := c.lat(ctx, size, 0, n, poll, nil); return err }},
		{"raw TCP", func(n int) error { _, err := quiet.lat(ctx, size, 0, n, poll); return err }},
	}
	for _, p := range paths {
		for t0, n := time.Now(), 100; time.Since(t0) < primeFor; n = min(2*n, primeChunk) {
			if err := p.run(n); err != nil {
				return fmt.Errorf("priming %s: %w", p.name, err)
			}
			if testHookPrime != nil {
				testHookPrime(p.name)
			}
		}
	}
	return nil
}

// testHookPrime, set by tests only, sees each chunk prime runs, by path.
var testHookPrime func(path string)

// godatAndRaw measures one bench row: godat with run, then the raw TCP
// baseline with raw, each under its progress line (bw: a rate).
func godatAndRaw[T any](prog *progress, label string, size, iters int, bw bool, run, raw func() (T, error)) (g, r T, err error) {
	prog.begin(label+" godat", size, iters, bw)
	g, err = run()
	prog.end()
	if err != nil {
		return g, r, fmt.Errorf("%s godat: %w", label, err)
	}
	prog.begin(label+" raw TCP", size, iters, bw)
	r, err = raw()
	prog.end()
	if err != nil {
		return g, r, fmt.Errorf("%s: %w", label, err)
	}
	return g, r, nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// checkSize refuses a message size the EP cannot carry.
func (c *client) checkSize(size int, rdma bool) error {
	lim, what := c.epAttr.MaxMessageSize, "message"
	if rdma {
		lim, what = c.epAttr.MaxRDMASize, "RDMA"
	}
	if lim > 0 && uint64(size) > uint64(lim) {
		return fmt.Errorf("size %d exceeds the EP's maximum %s size %d", size, what, lim)
	}
	return nil
}

// lat runs a send/recv ping-pong of warm+iters round trips of size-byte
// messages and returns the one-way latency (half the round trip) of the
// timed ones. Each side keeps one receive posted ahead, and posts the
// one that replaces it after it sends (off the critical path).
func (c *client) lat(ctx context.Context, size, warm, iters int, poll bool, prog *progress) (time.Duration, error) {
	req := newMsg(kindLat).u64(tagLength, uint64(size)).u64(tagCount, uint64(warm+iters))
	if poll {
		req.u64(tagPoll, 1)
	}
	if _, err := c.call(ctx, req, 1, nil); err != nil {
		return 0, err
	}
	recv := []api.LMRTriplet{c.local.tri(0, size)}
	send := []api.LMRTriplet{c.local.tri(c.slot, size)}
	sends := 0 // sends posted and not completed
	var ev api.Event
	var t0 time.Time
	// The receive of each pong is posted before its ping goes out, but
	// not between a pong and the next ping: the one for the next pong
	// follows the ping, off the critical path, as a latency-minded DAT
	// consumer keeps its receives posted ahead.
	if err := c.ep.PostRecv(recv, 1, api.CompletionDefault); err != nil {
		return 0, fmt.Errorf("PostRecv: %w", err)
	}
	for i := 0; i < warm+iters; i++ {
		if i == warm {
			t0 = time.Now()
			prog.start()
		}
		if err := c.ep.PostSend(send, 2, api.CompletionDefault); err != nil {
			return 0, fmt.Errorf("PostSend: %w", err)
		}
		sends++
		if i+1 < warm+iters {
			if err := c.ep.PostRecv(recv, 1, api.CompletionDefault); err != nil {
				return 0, fmt.Errorf("PostRecv: %w", err)
			}
		}
		for got := false; !got || sends > maxWindow; {
			if err := c.next(ctx, poll, &ev); err != nil {
				return 0, err
			}
			if err := c.dtoOK(&ev); err != nil {
				return 0, err
			}
			switch ev.DTO.Op {
			case api.OpSend:
				sends--
			case api.OpReceive:
				if ev.DTO.Length != uint32(size) {
					return 0, fmt.Errorf("received %d bytes, want %d", ev.DTO.Length, size)
				}
				got = true
			}
		}
		prog.add(1)
	}
	d := time.Since(t0) / time.Duration(2*iters)
	for sends > 0 {
		if err := c.next(ctx, false, &ev); err != nil {
			return 0, err
		}
		if err := c.dtoOK(&ev); err != nil {
			return 0, err
		}
		sends--
	}
	return d, nil
}

// dtoOK checks that ev is a successful DTO completion.
func (l *link) dtoOK(ev *api.Event) error {
	if ev.Number != api.DTOCompletionEvent {
		return fmt.Errorf("unexpected event %v", ev.Number)
	}
	if ev.DTO.Status != api.DTOSuccess {
		return &dtoError{d: ev.DTO, conn: l.connState()}
	}
	return nil
}

// bw streams warm+iters RDMA writes of size bytes into the server's window,
// keeping up to maxWindow outstanding, and returns the throughput of the
// timed ones in bytes per second: from the first timed post to the last
// completion (a write's completion means its data is placed at the peer).
// A SYNC round trip afterwards checks that the connection is healthy.
func (c *client) bw(ctx context.Context, w remoteWindow, size, warm, iters int, poll bool, prog *progress) (float64, error) {
	if size > w.len {
		return 0, fmt.Errorf("size %d exceeds the server's %d-byte window", size, w.len)
	}
	win := maxWindow
	if m := c.epAttr.MaxRequestDTOs; m > 0 {
		win = max(min(win, m/2), 1)
	}
	src := []api.LMRTriplet{c.local.tri(c.slot, size)}
	dst := w.at(0, size)
	if err := c.serverMode(ctx, poll); err != nil {
		return 0, err
	}
	stream := func(count int, timed bool) error {
		return c.pipeline(ctx, count, win, poll, timed, prog, func(k int) error {
			if err := c.ep.PostRDMAWrite(src, api.Cookie(k), dst, api.CompletionDefault); err != nil {
				return fmt.Errorf("PostRDMAWrite: %w", err)
			}
			return nil
		})
	}
	if err := stream(warm, false); err != nil {
		return 0, err
	}
	prog.start()
	t0 := time.Now()
	if err := stream(iters, true); err != nil {
		return 0, err
	}
	el := time.Since(t0)
	// The SYNC round trip also checks that the connection is healthy, and
	// puts the server back in wait mode.
	if err := c.serverMode(ctx, false); err != nil {
		return 0, err
	}
	return float64(size) * float64(iters) / el.Seconds(), nil
}

// serverMode tells the server, with a SYNC round trip, to busy-poll until
// the next request (poll) or to wait in EVD.Wait, so that in a poll run
// both ends spin, as both ends of the raw baseline do.
func (c *client) serverMode(ctx context.Context, poll bool) error {
	req := newMsg(kindSync)
	if poll {
		req.u64(tagPoll, 1)
	}
	_, err := c.call(ctx, req, 1, nil)
	return err
}

// readWindow is how many RDMA reads a read run keeps outstanding: at most
// maxWindow, and no more than the provider lets be in flight on this
// connection, which is the smaller of this EP's MaxRDMAReadOut and the
// server EP's MaxRDMAReadIn (it reports it with the window). The IA's
// per-EP read limit bounds it too, and so does half the EP's request
// queue, as for bw. Posting more reads would only queue them behind the
// ones in flight.
func (c *client) readWindow(w remoteWindow) int {
	win := maxWindow
	for _, lim := range []int{c.epAttr.MaxRDMAReadOut, w.readsIn, c.n.attr.MaxRDMAReadPerEPOut, c.epAttr.MaxRequestDTOs / 2} {
		if lim > 0 {
			win = min(win, lim)
		}
	}
	return max(win, 1)
}

// read measures RDMA reads of size bytes from the start of the server's
// window into dst, keeping win outstanding: warm untimed reads, then iters
// timed ones. It returns the throughput of the timed ones in bytes per
// second, from the first timed post to the last completion (a read
// completes once its data is in local memory).
//
// The window's first size bytes must hold the pattern of seed (see fill).
// Every read lands in one of three regions of dst, each cleared before
// the timed reads: the first timed read in the first region, the last in
// the third, the others (and the warm-up's) in the second. After the run
// all three are checked in full, so a read that places nothing, or the
// wrong bytes, fails the row.
func (c *client) read(ctx context.Context, w remoteWindow, dst *buf, size, win int, seed uint64, warm, iters int, poll bool, prog *progress) (float64, error) {
	if size > w.len {
		return 0, fmt.Errorf("size %d exceeds the server's %d-byte window", size, w.len)
	}
	if 3*size > len(dst.b) {
		return 0, fmt.Errorf("size %d exceeds the %d-byte read buffer", size, len(dst.b)/3)
	}
	regions := [3]api.LMRTriplet{dst.tri(0, size), dst.tri(size, size), dst.tri(2*size, size)}
	src := w.at(0, size)
	if err := c.serverMode(ctx, poll); err != nil {
		return 0, err
	}
	defer c.serverMode(ctx, false)
	stream := func(count int, timed bool) error {
		return c.pipeline(ctx, count, win, poll, timed, prog, func(k int) error {
			r := 1
			switch {
			case !timed:
			case k == 0:
				r = 0
			case k == count-1:
				r = 2
			}
			if err := c.ep.PostRDMARead(regions[r:r+1], api.Cookie(k), src, api.CompletionDefault); err != nil {
				return fmt.Errorf("PostRDMARead: %w", err)
			}
			return nil
		})
	}
	if err := stream(warm, false); err != nil {
		return 0, err
	}
	clear(dst.b[:3*size])
	prog.start()
	t0 := time.Now()
	if err := stream(iters, true); err != nil {
		return 0, err
	}
	el := time.Since(t0)
	// The reads' completions make their data visible (no sync call: those
	// are for memory a peer's RDMA reaches).
	for r, what := range []string{"first", "middle", "last"} {
		if (r == 1 && iters < 3) || (r == 2 && iters < 2) {
			continue // no read went there
		}
		if i := checkPattern(dst.b[r*size:(r+1)*size], seed); i >= 0 {
			return 0, fmt.Errorf("RDMA read: byte %d of %d is wrong in the %s read's buffer", i, size, what)
		}
	}
	return float64(size) * float64(iters) / el.Seconds(), nil
}

// parseSizes parses -size: a comma-separated list of parseSize's sizes.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := parseSize(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// sizeUnits are the units parseSize takes, upper-cased, with their
// multipliers: binary, as sizeName writes them and as RDMA tools count
// message sizes, also when written KB or MB.
var sizeUnits = map[string]int{"": 1, "B": 1,
	"K": 1 << 10, "KI": 1 << 10, "KB": 1 << 10, "KIB": 1 << 10,
	"M": 1 << 20, "MI": 1 << 20, "MB": 1 << 20, "MIB": 1 << 20,
	"G": 1 << 30, "GI": 1 << 30, "GB": 1 << 30, "GIB": 1 << 30,
}

// parseSize parses one benchmark message size: a positive decimal number
// with an optional unit, K, M or G (also KiB, KB, Ki and the like, in any
// case; all powers of 1024) or B, up to maxBenchSize. Its errors quote f
// as it was written.
func parseSize(f string) (int, error) {
	f = strings.TrimSpace(f)
	i := strings.IndexFunc(f, func(r rune) bool { return !strings.ContainsRune("0123456789+-.", r) })
	if i < 0 {
		i = len(f)
	}
	num, unit := f[:i], strings.TrimSpace(f[i:])
	mult, ok := sizeUnits[strings.ToUpper(unit)]
	if !ok && num != "" {
		return 0, fmt.Errorf("bad size %q: unknown unit %q; want K, M or G (powers of 1024; KiB, MB and the like work too)", f, unit)
	}
	v, err := strconv.Atoi(num)
	if errors.Is(err, strconv.ErrRange) || (err == nil && v > 0 && v > maxBenchSize/mult) {
		what := num + " bytes"
		if mult > 1 {
			what = num + " " + strings.ToUpper(unit[:1]) + "iB"
		}
		return 0, fmt.Errorf("bad size %q: %s is more than the largest message, %s", f, what, sizeName(maxBenchSize))
	}
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("bad size %q: want a positive number of bytes, with an optional unit K, M or G (powers of 1024)", f)
	}
	return v * mult, nil
}

// sizeName formats a size the way -size takes it: 64, 4K, 1M.
func sizeName(n int) string { return units.Exact(uint64(n), "") }

// pipeline runs count requests with up to win in flight: post(k) posts
// the k-th, and each completion is reaped and checked in turn. timed
// counts the completions as progress.
func (c *client) pipeline(ctx context.Context, count, win int, poll, timed bool, prog *progress, post func(k int) error) error {
	var ev api.Event
	posted, done := 0, 0
	for done < count {
		for posted < count && posted-done < win {
			if err := post(posted); err != nil {
				return err
			}
			posted++
		}
		if err := c.next(ctx, poll, &ev); err != nil {
			return err
		}
		if err := c.dtoOK(&ev); err != nil {
			return err
		}
		done++
		if timed {
			prog.add(1)
		}
	}
	return nil
}
