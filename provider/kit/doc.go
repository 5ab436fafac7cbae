// Package kit is what a software DAT provider is built from: the parts
// godat's own providers (loopback, tcp, the plugin server, and where it
// applies verbs) share, published so that a provider in another module can
// be written the same way. It plays the role of libfabric's prov/util and
// of rdma-core's verbs_dummy_ops: bases a provider embeds or calls, so that
// it writes only what is its own (how data moves, how a connection request
// travels, how memory is resolved).
//
// Stability: kit is less stable than package api. api is the contract
// between consumers and providers and changes only with the DAT pages;
// kit is a toolbox and may change shape between godat releases. A
// provider that uses it pins a godat version, as it does anyway for api.
//
// # What a provider gets from the registry
//
// Read api's package doc first: the registry's guard checks handles,
// freed objects, in-use rules of PZ/EVD/CNO/SRQ, IOV limits, completion
// flags, private-data sizes and more before a call reaches a provider.
// The kit does not repeat those checks; it holds what needs a provider's
// own state.
//
// # The parts
//
// In this package:
//
//   - IA, the base of a provider's IA object: its handle type, async EVD,
//     closed mark and BeginClose (or LockClose), the start of
//     dat_ia_close(3DAT), with ClearAll for its end; Live and WhileOpen
//     for the calls that need an open IA;
//   - Set, a table of one kind of object of an IA (Put adds to it for a
//     create, Each calls a method of every object, as Close does), and
//     InUse, which decides a graceful dat_ia_close(3DAT) from them once
//     for every provider; Create and Free, the whole of a create or a
//     free under the provider's lock;
//   - PZArg, the provider's own PZ that a create call names, or
//     ErrInvalidHandle;
//   - UnsupportedIA, UnsupportedPZ, UnsupportedEP and UnsupportedCR, bases
//     whose methods answer ErrModelNotSupported for the optional calls a
//     provider leaves out (SRQs and the receive counts that go with them,
//     RSPs, RMRs, CNOs with a descriptor, ...), and Unsupported, their
//     error, for a provider to return itself.
//     A provider embeds them in its objects and defines what it supports;
//     its own method wins over the base's.
//
// In the packages below it:
//
//   - eventq: the bounded, allocation-free event queue behind an EVD, with
//     overflow accounting, thresholds and CNO notification;
//   - dispatch: the EVD base a provider's EVD embeds (every EVD call but
//     Free, and PostAsync for the async EVD), Create, an IA's CreateEVD,
//     EVDs, the whole EVD with its Free for a provider whose events need
//     no help to arrive,
//     CNOObject, a complete CNO, and CNOs, the table that creates an IA's
//     CNOs and closes them with it; CheckOpen, the start of Open;
//     CtxKick, which wakes a waiter blocked outside Go's channels when
//     its context ends;
//   - completion: the requests the DTO post calls make, Posts, which gives
//     an EP those calls over its one PostRequest, and the events that
//     complete requests and receives under the rules for suppressed,
//     unsignalled and solicited completions, and Recvs, an EP's own
//     receive queue with the refusals and the flush of dat_ep_post_recv;
//   - connreq: the connect flags a single-path transport takes, CR, the
//     part of a connection request every provider keeps alike (its
//     reserved EP, its done mark, its query, the start of an accept,
//     Accepting, and ReleaseLocal and Finish, the reserved EP given
//     back), RSP, the part of an RSP that holds its EP, the
//     choice of the EP an accept connects, an active EP's connection
//     Timeout, and Quals, the listening qualifiers of a provider whose
//     qualifiers are its own;
//   - iaattr, epattr, srqattr: a provider's limits stated once (from
//     iaattr.Software, a software provider's), the IA, provider and EP
//     attributes made from them, and the checks of EP attributes and
//     SRQ sizes against them (epattr.Resolve, an EP's
//     attributes at creation); srqattr.SRQs and SRQ, the set that creates
//     an IA's SRQs and the base a provider's SRQ embeds (it writes
//     PostRecv and Free), and RecvPZ, the PZ an EP's receives are checked
//     against; epattr.Endpoint, the EP state every
//     provider records alike (attributes, state, connection ends,
//     watermarks, a freed mark, with Watch, Unclaim, Unreserve, DupTarget,
//     DisconnectStep, the state rules of dat_ep_disconnect, and
//     Modified and Change, those of dat_ep_modify), and epattr.Links,
//     the EP's PZ, EVDs and SRQ
//     as the provider's types, with their query and modify, for a
//     provider's EP to embed, and epattr.CreateEPs, both EP create
//     calls over the provider's one, with the attributes resolved;
//   - memreg: the LMR and RMR tables of an IA, with the triplet checks
//     every DTO makes before it touches memory, LMRs (a complete LMR
//     object and the set that creates an IA's, for a provider whose LMRs
//     are registrations and nothing more) and LMR creation for one with
//     an LMR type of its own (CreateLMR), RMRBase, what an RMR type
//     embeds, with Query, Target, the checked LMR a bind names, Bind,
//     the whole of dat_rmr_bind(3DAT) but the post of its request, and
//     Release, what dat_rmr_free(3DAT) does to the binding; RMR binding
//     and contexts (BindTarget, StartBind, FinishBind, DropBind,
//     FlushedContext), and Coherent, the sync calls of memory that needs
//     no synchronisation;
//   - ring and sgl: a reusing FIFO for queued work requests, and copies
//     between scatter/gather lists.
//
// godat's loopback provider (providers/loopback) is built from these parts
// and is the example to read beside examples/minimal-provider, a provider
// in its own module that uses only public packages.
package kit
