// Command dattest checks and measures a DAT connection between two
// processes, in the manner of the reference tool dtest(1). It works with
// any IA that godat's configuration names: it only uses the DAT API.
//
// Usage:
//
//	dattest -s [-d IA] [-p PORT] [-raw-port PORT] [-max-sessions N] [-idle-timeout D]
//	dattest -h HOST [-d IA] [-p PORT] [--json]
//	dattest -h HOST -bench lat|bw|read|wlat|all [-size 64,4K,1M] [-iters N] [-mode poll|wait] [--json]
//	dattest -demo [-mode poll|wait] [-size LIST] [-iters N] [--json]
//
// Common flags: -f FILE reads that configuration file, -embedded uses
// godat's built-in configuration; otherwise the search order of datinfo
// applies ($DAT_OVERRIDE, /etc/dat.conf, the built-in default). Without
// -d, dattest opens the IA named "tcp" when the configuration has an
// available one, else the first available IA (one marked default before
// the others), looking at the file's IAs before godat's built-in ones
// (which the registry lists next to any file); when none is available it
// says so and stops.
//
// # Server
//
// "dattest -s" opens the IA, creates a public service point on PORT (the
// connection qualifier; for the tcp provider, the TCP port; 0 picks a free
// one), listens for the raw TCP baseline on a second TCP port (the IA's IP,
// or 127.0.0.1 for an IA without IP addresses; -raw-port, default any free
// port), prints one line saying where it listens, and serves clients,
// printing a line per session, until SIGINT or SIGTERM; then it frees
// everything and exits 0.
//
// Anyone who reaches those ports is a client, so the server bounds what a
// client can take:
//
//   - It serves up to -max-sessions DAT sessions at once (default 4). A
//     connection request that finds them all taken waits up to two
//     seconds for one (a client that reconnects as its previous session
//     ends must not race the freeing of that session), then is rejected
//     with "server busy" in the REJECT; while as many requests wait as
//     there are sessions, further ones are rejected at once. It keeps as
//     many raw baseline connections open at once, and closes one more at
//     once.
//   - It drops a session, or raw connection, whose client sends nothing
//     for -idle-timeout (default 1m; 0: never). A session counts every
//     completion as activity; a raw connection, every message. A session
//     told to busy-poll (SYNC or BENCH_LAT with poll 1) spins only until
//     then. A bw or read row moves its data by RDMA, which the server
//     does not see, and the session has no request while the client runs
//     the row's raw baseline: a row that takes longer needs a larger
//     -idle-timeout. WELCOME tells the client the timeout, and a client
//     whose run fails after that long without a request says so.
//   - Every size a client declares is checked before anything is
//     allocated for it: a benchmark message (HELLO's largest size, a raw
//     baseline header's size) is at most 64 MiB, a count of messages at
//     most 2^40, an IOV_PREP count is clamped to 64 segments. A session
//     holds at most three buffers of its largest size (receive, send,
//     window) and a raw connection one, so the server's message memory
//     stays below -max-sessions × 256 MiB.
//
// # Validated sequence
//
// "dattest -h HOST" connects to the server and prints a table of steps,
// each PASS, FAIL or SKIP with a detail:
//
//	connect            connection with private data both ways: the server checks the
//	                   client's HELLO and echoes its nonce in the accept's WELCOME
//	send/recv          a patterned payload each way, verified by each receiver
//	rdma write         into the server's window; the server verifies after a send
//	rdma read          the server fills part of its window; the client reads and verifies
//	rmr bind           the server binds an RMR over part of its window; a write through
//	                   its context is verified; the server unbinds it
//	iov send/recv      a send gathered from several segments into a receive scattered
//	                   over several, and back
//	iov rdma           an RDMA write gathered from, and a read scattered into, several
//	                   segments
//	disconnect         graceful disconnect: DISCONNECTED, a posted receive is flushed
//	stale rmr context  on a second connection: bind, write, unbind, then a write
//	                   through the old context must complete with ERR_REMOTE_ACCESS
//	                   and break the connection
//
// Steps after a lost connection are skipped. Every buffer comes from
// api.AllocMemory and is registered as MemTypeVirtual, so the sequence
// suits every provider.
//
// # Benchmarks
//
// "dattest -h HOST -bench OPS" measures each op of OPS ("lat", "bw",
// "read", "wlat", "wlat-suppress", "wlat-watch", "all" for the first
// three, or a comma list) at each size of -size (default 64,4K,1M), -iters
// timed iterations (default 1000) after -warmup untimed ones, by default
// a warm-up of iters/2 (at least 10, at most 1000). It is that long
// because it must outlast a transient of the process, not of the link:
// after the blocking control exchange that begins each run, the Go
// runtime wakes often for some milliseconds, which a warm-up of a tenth
// did not cover on the rxe VM. Before its first row, a run with a
// warm-up also primes the process: an untimed ping-pong of its smallest
// size (4 KiB at most), for 250 ms over godat and then 250 ms over raw
// TCP, because the first timed phase of a fresh client is slower,
// whichever path it measures, than the same phase run later
// (docs/performance.md), and each row measures godat first. -warmup 0
// skips the priming too.
// The ops:
//
//   - lat: send/recv ping-pong (not RDMA-write ping-pong, whose arrival
//     only memory polling can see, so it would have no "wait" mode). Each
//     side keeps a receive posted ahead, and posts the next after it
//     sends. The figure is the one-way latency, half the mean round trip,
//     in microseconds.
//   - bw: the client streams RDMA writes of size bytes into the server's
//     window, keeping up to 16 outstanding; the figure is size × iters over
//     the time from the first timed post to the last completion, in GB/s
//     (10^9 bytes per second).
//   - read: the client RDMA-reads size bytes from the server's window into
//     its own memory, keeping as many reads outstanding as the connection
//     allows (the smaller of its EP's MaxRDMAReadOut and the server EP's
//     MaxRDMAReadIn, at most 16); the figure is computed as for bw. The
//     server fills the bytes with a pattern first; the first and the last
//     timed read land in buffers of their own, and those and the buffer of
//     the others are checked in full afterwards.
//   - wlat: RDMA-write ping-pong, the test of perftest's ib_write_lat.
//     The client RDMA-writes size bytes into the start of the server's
//     window; the server, spinning on the last byte of that area, answers
//     with an RDMA write of the same size into an area of the client's,
//     on whose last byte the client spins; then the next round trip.
//     Every write is signalled, and each side reaps its completions with
//     EVD.Dequeue between two looks at the byte (which also lets a
//     provider that progresses only inside its consumer's calls, tcp in
//     poll mode, place the peer's write). Watching memory has no
//     blocking form, so wlat needs -mode poll. The figure is the one-way
//     latency, half the mean round trip, in microseconds; its raw TCP
//     baseline is the busy-polling ping-pong of the lat row.
//   - wlat-suppress: wlat with every write posted with CompletionSuppress
//     (DAT_COMPLETION_SUPPRESS_FLAG): a write that succeeds completes
//     without an event, and only a failure reaches the EVD. The answer
//     proves that the write landed, so this is how a DAT consumer after
//     the latency writes the ping-pong; wlat reaps a completion per write,
//     as ib_write_lat does.
//   - wlat-watch: the ping-pong as OFA's dtest -W (dapl2-utils 2.1.10)
//     runs it, to set C programs on the C ABI beside native ones: each
//     side spins on EVD.Dequeue for its write's completion, then watches
//     memory for the peer's write and calls nothing meanwhile, so a
//     provider that moves bytes in its consumer's calls must place the
//     write some other way (tcp: its reader goroutine, or the peer's
//     poll for its own completion). Run it with -warmup 0 beside dtest,
//     which times from its first write.
//
// -mode poll makes the client (and the server, in a latency run) spin on
// EVD.Dequeue; -mode wait (the default) blocks in EVD.Wait.
//
// Each row is measured again with raw TCP between the same two processes:
// the server's second port, a ping-pong of the same message size, a
// stream of the same messages, or (read) the server sending the same
// messages to the client, each asked for by an 8-byte request from the
// client, with as many requests outstanding as the godat run had reads.
// In poll mode both raw sides busy-poll non-blocking read(2) and write(2)
// inside syscall.RawConn callbacks (the socket stays in Go's netpoller);
// in wait mode they use plain blocking Go reads and writes. The table shows op, size, mode, godat, raw and ratio
// = godat ÷ raw: a time ratio for latency (> 1: godat slower), a
// throughput ratio for bandwidth (> 1: godat faster). While a row runs, a
// progress line on stderr reports every half second (rewritten in place on
// a terminal).
//
// # Demo
//
// "dattest -demo" uses the built-in configuration: it starts a server
// on the "tcp" IA as a child process (dattest -s, re-executed) and runs
// the validated sequence and a short benchmark against it from the parent;
// the child is stopped on every path. When the built-in configuration has
// no tcp IA, it runs server and client as goroutines on the in-process
// loopback IA.
//
// # JSON
//
// --json prints JSON on stdout instead of tables. The sequence is an
// object {"client_ia", "server", "steps": [{"step", "result", "detail"}],
// "passed"}; a benchmark is an array of rows {"op", "size", "mode",
// "godat", "raw", "ratio", "unit", "iters"}: size in bytes, mode "poll" or
// "wait", unit "us" (one-way latency, microseconds) for ops "lat", "wlat" and
// "wlat-suppress" and "GB/s" (10^9 bytes per second) for ops "bw" and "read". The demo
// prints {"check": the sequence, "bench": the rows}.
//
// # Wire format of the control messages
//
// Client and server exchange addresses, RMR contexts and lengths in small
// self-describing messages, carried as connection private data (HELLO,
// WELCOME, REJECT) and as sends (the rest). Integers are little endian:
//
//	offset 0  magic    "GDT1"
//	offset 4  kind     u16   request kind; a reply has the request's kind | 0x8000
//	offset 6  nfields  u16
//	offset 8  fields   nfields × { tag u16, len u16, value [len]byte }
//
// Integer fields are 8 bytes. Tags: 1 nonce, 2 session kind (1 check,
// 2 bench, 3 stale-context check), 3 status (0 ok, else failed and tag 4,
// text, says why), 5 address, 6 length, 7 RMR context, 8 pattern seed,
// 9 window offset, 11 count, 12 raw TCP port, 13 payload, 15 poll (1),
// 16 largest benchmark size, 17 RDMA reads the server's EP serves at once,
// 18 suppress (1), 19 the server's idle timeout in milliseconds (0: none).
// Kinds: 1 HELLO {nonce, session, max size},
// 2 WELCOME {nonce echoed, status, raw port, idle timeout}, 3 REJECT {text}; requests
// 10 PING {seed, payload} (the reply carries seed+1 and its own payload),
// 11 WINDOW (reply: address, length, RMR context of the server's window,
// RDMA reads served at once),
// 12 VERIFY and 13 FILL {offset, length, seed}, 14 BIND {offset, length}
// (reply: address, length, context), 15 UNBIND (reply: the old context),
// 16 IOV_PREP {length, count} (the server posts its next receive as count
// segments; the reply says how many), 17 IOV_DATA (a PING taken and
// answered in several segments), 20 BENCH_LAT {length, count, poll} (the
// next count messages are pings of that length, each answered by a
// message of the same length; no header), 21 BENCH_WLAT {length, count,
// address, RMR context, suppress} (the server clears the first length
// bytes of its window, replies, then answers count RDMA-write pings
// landing there with RDMA-write pongs to the client's area the address
// and context name, posted with CompletionSuppress when suppress is 1;
// see wlat above), 22 SYNC. The client has one
// request outstanding at a time, and the server has exactly one receive
// posted for it, which is how IOV_PREP can shape it (during BENCH_LAT a
// second one is posted ahead for the pings).
//
// Exit status:
//
//	0  every step passed (client), benchmark done, or clean shutdown (server)
//	1  a step failed, or an error (the IA does not open, the server cannot be reached)
//	2  usage error
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/godat/godat/api"
	"github.com/godat/godat/registry"
	_ "github.com/godat/godat/registry/all"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// defaultPort is the connection qualifier the server listens on and the
// client connects to unless -p says otherwise.
const defaultPort = 18515

const usageText = `usage:
  dattest -s [-d IA] [-p PORT] [-raw-port PORT] [-max-sessions N] [-idle-timeout D]
                                                     serve until interrupted
  dattest -h HOST [-d IA] [-p PORT] [--json]         run the validated sequence
  dattest -h HOST -bench lat|bw|read|wlat|wlat-suppress|wlat-watch|all [-size 64,4K,1M] [-iters N] [-warmup N] [-mode poll|wait] [--json]
  dattest -demo [-mode M] [-size LIST] [-iters N] [-warmup N] [--json]   server and client here

flags:
  -s            run as server
  -h HOST       run as client against the server on HOST
  -d IA         the IA to open (default: "tcp" if available, else the first
                available IA, the ones marked default first; the file's IAs
                before the built-in ones; an IA whose device or address is
                not on this host is passed over)
  -p PORT       connection qualifier (TCP port for the tcp provider; default 18515;
                0 with -s picks a free one)
  -raw-port N   server: TCP port of the raw TCP baseline (default: any free port)
  -max-sessions N
                server: DAT sessions served at once, and raw baseline connections
                open at once (default 4, at most 1024); a request beyond waits up
                to 2s for a free session, then is rejected ("server busy"); a raw
                connection beyond is closed
  -idle-timeout D
                server: drop a session or raw connection whose client sends
                nothing for D (default 1m; 0: never). A bw or read row sends the
                server nothing while its RDMA runs, nor while its raw baseline
                runs: rows that take longer need a larger D
  -bench OPS    measure lat (send/recv ping-pong), bw (streaming RDMA write),
                read (pipelined RDMA read), wlat (RDMA-write ping-pong, spinning
                on memory; -mode poll only), wlat-suppress (wlat with the writes'
                completions suppressed), wlat-watch (wlat as OFA's dtest -W runs
                it: nothing called while it watches memory), all (lat,bw,read),
                or a comma list
  -size LIST    message sizes, comma separated, with units K, M, G (powers of
                1024; KiB, MB work too), at most 64M (default 64,4K,1M)
  -iters N      timed iterations per size (default 1000)
  -warmup N     untimed iterations before them (default iters/2, at least 10, at
                most 1000; 0 times from the first, as OFA's dtest does)
  -mode M       poll (spin on EVD.Dequeue) or wait (EVD.Wait; default)
  -demo         start a server (a child process; in-process for loopback) and a
                client on godat's built-in configuration
  -f FILE       read this configuration file
  -embedded     use godat's built-in configuration
  --json        print JSON instead of tables

server (-s) listens on:
  DAT           the IA's address, connection qualifier -p (for the tcp provider:
                TCP port -p of the IA's IP address)
  raw TCP       TCP port -raw-port of the IA's IP address (127.0.0.1 for an IA
                without IP addresses): the benchmarks' raw baseline
  Its first output line says where. Anyone who reaches these ports is a client:
  benchmark messages are at most 64M and message counts at most 2^40, so that the
  server's message buffers stay below -max-sessions x 256M.

exit status:
  0  all steps passed, benchmark done, or server shut down cleanly
  1  a step failed, or an error
  2  usage error
`

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// options are the parsed flags.
type options struct {
	serve    bool
	host     string
	ia       string
	port     uint64
	rawPort  int
	maxSess  int
	idle     time.Duration
	bench    string
	sizes    string
	iters    int
	warmup   int
	mode     string
	demo     bool
	file     string
	embedded bool
	json     bool

	params                        benchParams
	setSizes, setIters, setWarmup bool // -size, -iters, -warmup were given
}

// run is dattest: it parses args, writes its output to stdout and its
// diagnostics and progress to stderr, and returns the exit status. SIGINT
// and SIGTERM end it cleanly.
func run(args []string, stdout, stderr io.Writer) int {
	o, code, ok := parseArgs(args, stdout, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runWith(ctx, o, stdout, stderr)
}

// parseArgs parses and checks the flags; ok false means run must return
// code now.
func parseArgs(args []string, stdout, stderr io.Writer) (o options, code int, ok bool) {
	fs := flag.NewFlagSet("dattest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(fs.Output(), usageText) }
	fs.BoolVar(&o.serve, "s", false, "run as server")
	fs.StringVar(&o.host, "h", "", "server `HOST`")
	fs.StringVar(&o.ia, "d", "", "`IA` name")
	fs.Uint64Var(&o.port, "p", defaultPort, "connection qualifier")
	fs.IntVar(&o.rawPort, "raw-port", 0, "raw TCP baseline port")
	fs.IntVar(&o.maxSess, "max-sessions", defaultMaxSessions, "sessions served at once")
	fs.DurationVar(&o.idle, "idle-timeout", defaultIdleTimeout, "drop a client idle this long")
	fs.StringVar(&o.bench, "bench", "", "lat, bw, read or all")
	fs.StringVar(&o.sizes, "size", "64,4K,1M", "message sizes")
	fs.IntVar(&o.iters, "iters", 1000, "timed iterations")
	fs.IntVar(&o.warmup, "warmup", -1, "untimed iterations before them")
	fs.StringVar(&o.mode, "mode", "wait", "poll or wait")
	fs.BoolVar(&o.demo, "demo", false, "server and client on this host")
	fs.StringVar(&o.file, "f", "", "configuration `FILE`")
	fs.BoolVar(&o.embedded, "embedded", false, "use the built-in configuration")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(stdout)
		fs.Usage()
		return o, exitOK, false
	case err != nil:
		return o, exitUsage, false // the flag package printed the problem
	}
	usage := func(format string, a ...any) (options, int, bool) {
		fmt.Fprintf(stderr, "dattest: "+format+"\n%s", append(a, usageText)...)
		return o, exitUsage, false
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if fs.NArg() > 0 {
		return usage("unexpected argument %q", fs.Arg(0))
	}
	roles := 0
	for _, r := range []bool{o.serve, o.host != "", o.demo} {
		if r {
			roles++
		}
	}
	if roles != 1 {
		return usage("give exactly one of -s, -h HOST and -demo")
	}
	if o.file != "" && o.embedded {
		return usage("-f and -embedded exclude each other")
	}
	if o.demo && (o.file != "" || set["d"] || set["p"]) {
		return usage("-demo uses the built-in configuration: no -f, -d or -p")
	}
	if o.serve {
		for _, f := range []string{"bench", "size", "iters", "warmup", "mode", "json"} {
			if set[f] {
				return usage("-%s is for the client", f)
			}
		}
	} else {
		for _, f := range []string{"raw-port", "max-sessions", "idle-timeout"} {
			if set[f] {
				return usage("-%s is for the server", f)
			}
		}
	}
	if o.maxSess < 1 || o.maxSess > maxMaxSessions {
		return usage("bad -max-sessions %d: want 1 to %d", o.maxSess, maxMaxSessions)
	}
	if o.idle < 0 {
		return usage("bad -idle-timeout %v: want 0 (never) or more", o.idle)
	}
	if o.port > 1<<32-1 {
		return usage("bad -p %d", o.port)
	}
	if o.host != "" && o.port == 0 {
		return usage("-p 0 means any port, for the server only")
	}
	if o.rawPort < 0 || o.rawPort > 65535 {
		return usage("bad -raw-port %d", o.rawPort)
	}
	if o.bench == "" && !o.demo {
		for _, f := range []string{"size", "iters", "warmup", "mode"} {
			if set[f] {
				return usage("-%s needs -bench", f)
			}
		}
	}
	switch o.mode {
	case "poll", "wait":
	default:
		return usage("bad -mode %q: want poll or wait", o.mode)
	}
	if o.iters <= 0 {
		return usage("bad -iters %d: want a positive number", o.iters)
	}
	if set["warmup"] && o.warmup < 0 {
		return usage("bad -warmup %d: want 0 or more", o.warmup)
	}
	if !set["warmup"] {
		o.warmup = warmup(o.iters)
	}
	sizes, err := parseSizes(o.sizes)
	if err != nil {
		return usage("%v", err)
	}
	o.params = benchParams{sizes: sizes, iters: o.iters, warm: o.warmup, poll: o.mode == "poll"}
	o.setSizes, o.setIters, o.setWarmup = set["size"], set["iters"], set["warmup"]
	if o.bench != "" {
		for _, op := range strings.Split(o.bench, ",") {
			switch op = strings.TrimSpace(op); op {
			case "all":
				o.params.ops = append(o.params.ops, "lat", "bw", "read")
			case "lat", "bw", "read", "wlat", "wlat-suppress", "wlat-watch":
				o.params.ops = append(o.params.ops, op)
			default:
				return usage("bad -bench %q: want lat, bw, read, wlat, wlat-suppress, wlat-watch, all or a comma list", op)
			}
		}
		o.params.ops = slices.Compact(o.params.ops)
		for _, op := range o.params.ops {
			if isWLat(op) && !o.params.poll {
				return usage("-bench %s needs -mode poll: it watches memory, which has no blocking form", op)
			}
		}
	}
	return o, 0, true
}

// loadRegistry returns the registry the flags select.
func loadRegistry(o options) (*registry.Registry, error) {
	switch {
	case o.embedded:
		return registry.New(registry.EmbeddedConfig()), nil
	case o.file != "":
		return registry.Load(o.file)
	}
	return registry.Default()
}

// runWith runs what the options ask for until ctx ends.
func runWith(ctx context.Context, o options, stdout, stderr io.Writer) int {
	if o.demo {
		return demo(ctx, o, stdout, stderr)
	}
	reg, err := loadRegistry(o)
	if err != nil {
		fmt.Fprintln(stderr, "dattest:", err)
		return exitFailure
	}
	if o.serve {
		err := serve(ctx, serverConfig{reg: reg, ia: o.ia, port: o.port, rawPort: o.rawPort,
			maxSessions: o.maxSess, idle: o.idle, out: stdout, diag: stderr})
		if err != nil {
			fmt.Fprintln(stderr, "dattest:", err)
			return exitFailure
		}
		return exitOK
	}
	cfg := clientConfig{reg: reg, ia: o.ia, host: o.host, port: api.ConnQual(o.port), stderr: stderr}
	if len(o.params.ops) > 0 {
		return benchMain(ctx, cfg, o, stdout, stderr)
	}
	return checkMain(ctx, cfg, o, stdout, stderr)
}

func checkMain(ctx context.Context, cfg clientConfig, o options, stdout, stderr io.Writer) int {
	rep, err := runCheck(ctx, cfg)
	code := writeResult(o, stdout, stderr, rep, err, writeCheck)
	if code == exitOK && !rep.Passed {
		return exitFailure
	}
	return code
}

func benchMain(ctx context.Context, cfg clientConfig, o options, stdout, stderr io.Writer) int {
	rows, err := runBench(ctx, cfg, o.params)
	return writeResult(o, stdout, stderr, rows, err, writeBench)
}

// writeResult writes v, what a client run returned with err, as JSON under
// -json or else with write, and returns exitFailure if the run or the
// writing failed (saying why on stderr), else exitOK.
func writeResult[T any](o options, stdout, stderr io.Writer, v T, err error, write func(io.Writer, T) error) int {
	if err == nil {
		if o.json {
			err = writeJSON(stdout, v)
		} else {
			err = write(stdout, v)
		}
	}
	if err != nil {
		fmt.Fprintln(stderr, "dattest:", err)
		return exitFailure
	}
	return exitOK
}

func writeCheck(w io.Writer, rep *checkReport) error {
	fmt.Fprintf(w, "client IA %s, server %s\n\n", rep.ClientIA, rep.Server)
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tRESULT\tDETAIL")
	passed := 0
	for _, s := range rep.Steps {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Step, s.Result, s.Detail)
		if s.Result == resPass {
			passed++
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%d of %d steps passed\n", passed, len(rep.Steps))
	return err
}

// writeBench prints benchmark rows as a table, then a legend line for
// each op the rows have, in their order.
func writeBench(w io.Writer, rows []benchRow) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "OP\tSIZE\tMODE\tGODAT\tRAW TCP\tRATIO\t")
	var ops []string
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s %s\t%s %s\t%.2f\t\n", r.Op, sizeName(r.Size), r.Mode,
			num(r.Godat), r.Unit, num(r.Raw), r.Unit, r.Ratio)
		if !slices.Contains(ops, r.Op) {
			ops = append(ops, r.Op)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	for _, op := range ops {
		if _, err := fmt.Fprintf(w, "%s: %s\n", op, legend[op]); err != nil {
			return err
		}
	}
	return nil
}

// legend explains each op of the benchmark table; each line stands alone,
// since the table may show only some of the ops.
var legend = map[string]string{
	"lat":  "one-way latency (half a send/recv round trip); ratio = godat/raw time (>1: godat slower)",
	"bw":   "streaming RDMA write, 10^9 B/s; ratio = godat/raw throughput (>1: godat faster)",
	"read": "pipelined RDMA read (raw: server-to-client messages, one request each), 10^9 B/s; ratio = godat/raw throughput (>1: godat faster)",
	"wlat": "one-way latency of an RDMA-write ping-pong, each side spinning on memory (raw: the polling ping-pong); " +
		"ratio = godat/raw time (>1: godat slower)",
	"wlat-suppress": "wlat's ping-pong with the writes posted with CompletionSuppress (no completion for a write that succeeds); " +
		"ratio = godat/raw time (>1: godat slower)",
	"wlat-watch": "wlat's ping-pong as dtest -W runs it: each write's completion awaited, then nothing called while watching memory; " +
		"ratio = godat/raw time (>1: godat slower)",
}

// num formats a measurement with three significant digits.
func num(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	case x >= 1:
		return fmt.Sprintf("%.2f", x)
	}
	return fmt.Sprintf("%.3g", x)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
