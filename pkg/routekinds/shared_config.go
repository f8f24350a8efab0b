package routekinds

import (
	"strings"
	"sync"
)

// sharedConfig are the annotation names (under any prefix) some router flavour reads from routes
// as configuration every route shares (render.TenantGuards.Annotations, which render registers):
// the cache keeps those of an Ingress, and no other, so that allocation can refuse a route
// carrying one on such a shard. Tenants decide how many other annotations there are.
var sharedConfig = struct {
	sync.RWMutex
	names map[string]bool
}{names: map[string]bool{}}

// KeepSharedConfigAnnotations registers annotation names a flavour's routers read as shared
// configuration: the Ingress cache keeps them under any prefix.
func KeepSharedConfigAnnotations(names ...string) {
	sharedConfig.Lock()
	defer sharedConfig.Unlock()
	for _, n := range names {
		sharedConfig.names[n] = true
	}
}

// readAsSharedConfig reports whether annotation key is one of them, under any prefix.
func readAsSharedConfig(key string) bool {
	sharedConfig.RLock()
	defer sharedConfig.RUnlock()
	return sharedConfig.names[key[strings.LastIndex(key, "/")+1:]]
}
