// Package provider is where DAT providers make themselves known: a
// provider package calls Register from its init, and the registry finds
// it by name with Lookup when a configuration entry names it. It is the
// leaf registration point of DESIGN §2, the way database/sql/driver and
// image.RegisterFormat are: it imports only package api, so a provider
// stands below the registry and a program that links a provider (a
// plugin executable, say) does not link the registry, its configuration
// readers or its guard.
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
