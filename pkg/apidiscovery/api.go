// Package apidiscovery finds out whether the seed serves an API Shardgate can use but does not
// require (Cluster API, cert-manager), and keeps asking until it does.
package apidiscovery

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
)

// API finds out whether the seed serves a kind of an API group version, and keeps asking until
// it does: an API installed after Shardgate is picked up without a restart, and a failed
// discovery request means "not known yet", never "not installed". Once found it stays found (an
// uninstalled CRD makes reads fail, which removes nothing).
type API struct {
	// GroupVersion and Kind to look for, e.g. "cluster.x-k8s.io/v1beta2" and "Cluster".
	GroupVersion, Kind string
	// Name for the logs ("Cluster API"), and what holds until it is found.
	Name, Meanwhile string
	Discovery       discovery.DiscoveryInterface
	// Interval between discovery attempts until the API is found (default 10 s).
	Interval time.Duration
	Log      logr.Logger

	available atomic.Bool
	mu        sync.Mutex
	onFound   []func()
}

// Available reports whether the API has been discovered.
func (c *API) Available() bool { return c != nil && c.available.Load() }

// OnFound registers f to run once when the API is found (at once if it already was).
func (c *API) OnFound(f func()) {
	c.mu.Lock()
	if !c.available.Load() {
		c.onFound = append(c.onFound, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f()
}

// Found records that the API is served and runs the OnFound callbacks (once).
func (c *API) Found() {
	c.mu.Lock()
	if c.available.Load() {
		c.mu.Unlock()
		return
	}
	c.available.Store(true)
	fs := c.onFound
	c.onFound = nil
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}

// Start implements manager.Runnable.
func (c *API) Start(ctx context.Context) error {
	interval := c.Interval
	if interval == 0 {
		interval = 10 * time.Second
	}
	logged := false
	for {
		found, err := c.discover()
		switch {
		case found:
			c.Log.Info(c.Name + " found in the seed")
			c.Found()
			return nil
		case err != nil:
			c.Log.Info(c.Name+" discovery failed; will retry", "error", err.Error())
		case !logged:
			c.Log.Info(c.Name + " not installed in the seed (yet): " + c.Meanwhile)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func (c *API) discover() (bool, error) {
	res, err := c.Discovery.ServerResourcesForGroupVersion(c.GroupVersion)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	for _, r := range res.APIResources {
		if r.Kind == c.Kind {
			return true, nil
		}
	}
	return false, nil
}
