// Package provider is where DAT providers make themselves known: a
// provider package calls Register from its init, and the registry finds
// it by name with Lookup when a configuration entry names it. It is the
// leaf registration point of DESIGN §2, the way database/sql/driver and
// image.RegisterFormat are: it imports only package api, so a provider
// stands below the registry and a program that links a provider (a
// plugin executable, say) does not link the registry, its configuration
// readers or its guard.
//
// Besides api.Provider, which is all a provider must implement, a
// provider may implement the optional interfaces here (Availability,
// ParamChecker), the way a database/sql driver may implement driver's
// optional interfaces; the registry asks for them.
//
// A program opens IAs through package registry, never through this
// package; Lookup is for the registry and for tools that list what is
// built in.
package provider

import (
	"sort"
	"sync"

	"github.com/godat/godat/api"
)

var (
	mu        sync.RWMutex
	providers = map[string]api.Provider{}
)

// Register makes p available under name, for every configuration entry
// whose provider is name. It is meant for the provider package's init.
// Registering a nil provider or one name twice panics
// (DAT_PROVIDER_ALREADY_REGISTERED for the latter), as a programming
// error.
func Register(name string, p api.Provider) {
	mu.Lock()
	defer mu.Unlock()
	if p == nil {
		panic("provider: Register of nil provider " + name)
	}
	if _, dup := providers[name]; dup {
		panic(api.Errorf(api.ProviderAlreadyRegistered, api.NoSubtype, "provider "+name+" registered twice").Error())
	}
	providers[name] = p
}

// Lookup returns the provider registered under name.
func Lookup(name string) (api.Provider, bool) {
	mu.RLock()
	defer mu.RUnlock()
	p, ok := providers[name]
	return p, ok
}

// Names returns the names of the registered providers, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	names := make([]string, 0, len(providers))
	for n := range providers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Availability is an optional interface of a provider that can tell,
// without opening anything, that none of its IAs can be opened here: a
// provider built without support for its hardware, or a machine without
// the device. The registry's List and Open ask it before anything else;
// a non-empty reason makes the IA unavailable with that reason, word for
// word.
// iaParams is the IA's ia_params, for a provider whose answer depends on
// it.
type Availability interface {
	Unavailable(iaParams string) string
}

// ParamChecker is an optional interface of a provider that can tell, from
// an IA's configuration entry alone, that Open would refuse its ia_params
// or its platform_params on any host: a malformed address, an unknown
// option, a value out of range. The registry's ParseConfig (and so
// LoadConfig) asks the built-in provider of each IA of a file, and reports
// each error as a problem of the file at the position of that value, so
// that a mistake is found by reading the file, with its position, instead
// of by opening the IA. p has the entry's Name, Params, PlatformParams and ThreadSafe.
//
// A check must not look at the host (devices, interfaces, addresses) or
// have any effect: its answer must be the same on every machine, and it
// must accept whatever Open might accept somewhere. iaParams and
// platformParams say what is wrong with each; nil when nothing is. Only
// an error's message is used (for an *api.Error, its Msg).
type ParamChecker interface {
	CheckParams(p api.OpenParams) (iaParams, platformParams error)
}

// CRRefuser is an optional interface of a provider's connection request
// (api.CR). Refuse ends the request as the provider itself does when it
// cannot take one (its service point's EVD full, its IA closing): the
// requester sees DAT_CONNECTION_EVENT_NON_PEER_REJECTED, not a consumer's
// PEER_REJECTED, and the CR is destroyed as by Reject, with the same
// errors. It serves a layer between the consumer and the provider that
// must refuse a request the consumer never saw, as the plugin host does
// when its own queue is full though the plugin's had room. Without it
// such a layer can only Reject.
type CRRefuser interface {
	Refuse() error
}
