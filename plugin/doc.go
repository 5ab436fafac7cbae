// Package plugin is the vendor's side of godat's provider plugins: DAT
// providers that are separate executables (DESIGN §7). A vendor's main
// calls Serve with its api.Provider. The host's side, which the registry
// uses for the [[plugin]] tables of the configuration, is package
// plugin/host; the two share only the wire format
// (plugin/internal/wire: the gRPC protocol's conversions, the
// shared-memory rings and the control socket's messages). So a plugin
// executable links neither the registry nor its configuration readers,
// and a program that opens plugin IAs does not link Serve's server. Both
// use github.com/hashicorp/go-plugin for the process, the handshake and
// the gRPC control path, and shared memory for the data path. This
// comment describes the design of both sides.
//
// # For vendors
//
// A provider plugin is a main package that calls Serve with its
// api.Provider:
//
//	func main() { plugin.Serve(acme.Provider{}, plugin.WithVersion("1.2.0")) }
//
// The provider is the same api.Provider an in-process provider would be;
// examples/loopback-plugin serves godat's loopback provider this way and
// passes the whole tests/conformance suite through the host. Its README
// tells how to build, checksum and configure a plugin. A provider that
// makes its own net.Addr values should pass WithAddrParser so that
// addresses a consumer typed reach it in its own type.
//
// The served provider must support CNOs with a wait agent; the vendor's
// side learns of the provider's events that way (see "Objects and calls").
// Open creates a CNO with IA.CreateCNO and attaches every EVD of the IA to
// it with EVD.ModifyCNO, the async EVD included; the provider calls the
// agent, naming the EVD it returned, whenever it would wake a waiter on
// that EVD, after the event is queued, and never while holding a lock that
// EVD.Dequeue takes, since the agent dequeues at once. Before a graceful
// IA.Close the CNO is detached and freed. A provider without CNOs fails
// every Open with its own error, in words that say what the host needs.
//
// The served provider's CRs should also implement provider.CRRefuser.
// Software events live only in the host's queues, so a connection request
// can find the host's EVD full though the provider's had room; the host
// then refuses it through Refuse, and the requester sees
// NON_PEER_REJECTED as with any full backlog. A CR without Refuse is
// rejected instead, and its requester sees PEER_REJECTED, which the
// conformance suite fails.
//
// # Lifecycle
//
// The host starts the executable on the first Open of one of its IAs
// (with the [[plugin]]'s args and env; its standard input is /dev/null),
// completes go-plugin's handshake (magic cookie, protocol version
// ProtocolVersion, gRPC only) within host.StartTimeout, and serves every IA of
// that plugin from the one process. When the last IA closes, the process
// is stopped and reaped. Whatever keeps the plugin from starting — a
// missing or non-executable file, a sha256 mismatch, another protocol
// version, an exit or silence during the handshake — makes Open fail with
// DAT_PROVIDER_NOT_FOUND and the reason, which datinfo shows too; the last
// line the plugin wrote to its standard error is part of it. A start that
// takes longer than a second is announced once per plugin on standard
// error (the host's log, see host.EnvLog), naming the executable and the
// timeout. A plugin that stayed silent for all of StartTimeout is not
// started again for host.RetryDelay unless its executable changes: Opens of
// its IAs fail at once with the same reason meanwhile. A context that
// ends during a start abandons it (Open returns the context's error) and
// is not held against the plugin.
//
// The path is absolute by the time the host sees it (the registry joins a
// relative one to the configuration file's directory and makes it
// absolute when it reads the file; a program-made PluginEntry is made
// absolute against the working directory), and is never looked up in
// $PATH. A plugin with a sha256 is opened once: the host hashes the file
// through that descriptor and has the kernel execute the same descriptor
// (the child execs /proc/self/fd/N), so a file renamed over the path after
// the check does not run, and a start hashes again every time rather than
// trusting the size or time of the file. A file rewritten in place between
// the check and the exec is hashed again right after the exec (the kernel
// refuses writes to a running executable from then on) and killed if it
// no longer matches. argv[0] stays the configured path; a pinned #!
// script sees /proc/self/fd/N as its $0, and the pin covers the script,
// not its interpreter.
//
// The plugin runs in a process group of its own. When its process ends —
// stopped, crashed, refused or timed out — the host kills the whole group
// before it reaps the process, so children the plugin (or a wrapper
// script) started do not outlive it and do not hold its standard output
// or error open; a descendant that left the group is cut off from the
// pipes a second later. go-plugin's unix socket lives in a directory made
// for the one process, removed when the process ends, and the plugin
// removes it itself when it exits because its host died.
//
// The host passes the plugin one end of a SOCK_SEQPACKET socket pair
// (ExtraFiles; $GODAT_PLUGIN_CTL_FD names it). The plugin exits, status 3,
// as soon as it reads end-of-file on it: a host that dies, even by
// SIGKILL, leaves no plugin behind.
//
// # Objects and calls
//
// Every DAT object lives in the plugin, in a table of 64-bit ids; the host
// holds proxies that implement the api interfaces, and the registry wraps
// them in its guard like any provider's objects. Control calls (create,
// free, query, modify, connect, accept, bind...) are gRPC calls
// (proto/provider.proto) whose replies carry the DAT return type, subtype
// and message, rebuilt on the host as an *api.Error.
//
// EVDs and CNOs are host-side queues (provider/kit/eventq): waiting, software
// events, enable/disable, unwaitable and CNOs never cross the process
// boundary. The plugin takes the events off its provider's EVDs itself:
// after every call, after every batch of posts, and whenever the provider
// notifies — the plugin attaches a CNO of its own to every provider EVD,
// so each notification (a signalled completion, a solicited receive) is
// forwarded after the events before it, and the host wakes its waiter or
// CNO exactly as the provider would have. A call returns only once the
// events it caused are on the host's queues. An unsignalled completion
// that the provider produces later on its own (not as the effect of a
// call or post) reaches the host with the next drain.
//
// # Memory
//
// LMR memory must come from api.AllocMemory (anything else is
// DAT_INVALID_PARAMETER naming it). The host sends the region's memfd
// over the control socket (SCM_RIGHTS) and the plugin maps it with
// api.MapMemory at the same virtual address, so triplets, registered
// addresses, RMR contexts and remote addresses mean the same bytes on both
// sides and cross untranslated — remote addresses included, which a
// translating scheme could not serve. AllocMemory places regions in an
// address band that neither the kernel nor the Go runtime uses by default
// (see api/memory.go) so that the address is free in the plugin.
//
// # The data path
//
// Posts and completions do not pay an RPC each. One shared region per
// plugin process holds a submission ring (host to plugin) and a completion
// ring (plugin to host), with an eventfd doorbell each that is rung only
// when the other side sleeps (plugin/internal/wire/shm.go). A post takes the ring when the EP
// is connected, surely within its queue limits and its IOV fits an entry
// (7 segments): then the provider has no reason to refuse it, so the post
// can return before the plugin runs it. A queue whose limit is taken up by
// suppressed requests is not surely within it (their successes bring no
// event the host could count), so its posts ask the provider, and an
// application that needs the ring's speed signals a request now and then
// (half a queue apart suffices). Other posts, SRQ receives and
// binds are gRPC calls that return the provider's answer. Every control
// call carries the host's submission count, and the plugin executes those
// submissions before the call, so nothing overtakes an earlier post. A
// Dequeue that finds its queue empty reads the completion ring itself: a
// polling consumer makes no system call while events are there. Should a
// provider refuse a post taken from the ring, the post completes with
// DTO_ERR_LOCAL_EP rather than disappear.
//
// # Crashes
//
// The host records each DTO and bind it posts until its completion comes
// back, and whether each EP is connected or connecting. If the plugin
// process dies, its Watch call ends; the host reaps the process, takes the
// completions it had already written, then gives each of its IAs
// ASYNC_ERROR_IA_CATASTROPHIC, completes every outstanding DTO and bind
// with DTO_ERR_FLUSHED (in post order, requests first) and every
// connection with CONNECTION_BROKEN. Later calls on its objects return
// DAT_INTERNAL_ERROR saying the plugin exited; the IAs still close, and the
// next Open starts a new process. Other providers and the host are not
// affected.
package plugin
