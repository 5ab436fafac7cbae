// Package api is the DAT 2.0 vocabulary of godat: value types, flags,
// events, errors with their DAT return codes, and the provider interface
// table — the Go interfaces IA, PZ, EVD, CNO, EP, PSP, RSP, CR, LMR, RMR and
// SRQ that every provider implements and every consumer calls.
//
// Consumers get an IA from the registry (registry.Open) and reach every other
// object through it. The names follow the DAT man pages (dat_ia_open(3DAT)
// and friends), which are the authority on semantics; where DAT 2.0 changed
// a call, the 2.0 headers decide.
//
// # The split between the registry and a provider
//
// The registry wraps every object a provider returns in a guard that
// implements the same interface (the way database/sql wraps a driver). A
// provider therefore relies on these guarantees and does not repeat them:
//
//   - every handle argument it receives is one of its own live objects of the
//     same IA (never a guard, never a freed object); a nil handle reaches it
//     only where the call allows nil; event pointers and contexts are never
//     nil;
//   - no call reaches an object after its Free, or any object of an IA after
//     the IA's Close; no call that creates objects reaches the IA once its
//     Close has begun (one in progress ends first);
//   - PZ, EVD, CNO and SRQ are not freed while another object uses them
//     (the guard answers ErrInvalidState with the in-use subtype);
//   - EVDs given to CreateEP, CreatePSP and CreateRSP accept the event
//     streams the page requires;
//   - posts respect the EP's IOV limits and completion-flag attributes, and
//     an RDMA operation's local and remote lengths fit each other,
//     private data respects ProviderAttr.MaxPrivateDataSize, a connect's
//     QOS is among ProviderAttr.QOSSupported, and timeouts, EVD
//     thresholds and EP watermarks are in range;
//   - flags and enumerated arguments name only values this package
//     defines: EVD stream flags (never none), PSP flags, connect flags,
//     EP completion flags, and the memory privileges and VA type of an
//     LMR create or an RMR bind (CheckPrivVA);
//   - calls are serialized when the configuration marks the IA
//     non-thread-safe.
//
// A provider owns everything else: the EP state machine, validating
// triplets against its LMRs (where the memory is resolved anyway, or by the
// hardware), RMR contexts and binding, LMR in-use rules, event delivery, and
// the DTO semantics of DESIGN §4. It fills events with its own objects; the
// guard translates them into the consumer's handles on Dequeue and Wait.
package api
