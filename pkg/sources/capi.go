package sources

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// ClusterAPI finds out whether the seed serves Cluster API's v1beta2 Clusters, and keeps asking
// until it does: Cluster API installed after Shardgate is picked up without a restart, and a
// failed discovery request means "not known yet", never "not installed". Once found it stays
// found (an uninstalled CRD makes reads fail, which removes nothing).
type ClusterAPI struct {
	Discovery discovery.DiscoveryInterface
	// Interval between discovery attempts until Cluster API is found (default 10 s).
	Interval time.Duration
	Log      logr.Logger

	available atomic.Bool
	mu        sync.Mutex
	onFound   []func()
}

// Available reports whether Cluster API has been discovered.
func (c *ClusterAPI) Available() bool { return c != nil && c.available.Load() }

// OnFound registers f to run once when Cluster API is found (at once if it already was).
func (c *ClusterAPI) OnFound(f func()) {
	c.mu.Lock()
	if !c.available.Load() {
		c.onFound = append(c.onFound, f)
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	f()
}

// Found records that Cluster API is served and runs the OnFound callbacks (once).
func (c *ClusterAPI) Found() {
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
func (c *ClusterAPI) Start(ctx context.Context) error {
	interval := c.Interval
	if interval == 0 {
		interval = 10 * time.Second
	}
	logged := false
	for {
		found, err := c.discover()
		switch {
		case found:
			c.Log.Info("Cluster API found in the seed; Clusters are cluster sources")
			c.Found()
			return nil
		case err != nil:
			c.Log.Info("Cluster API discovery failed; will retry (Cluster clusters are kept as they are meanwhile)", "error", err.Error())
		case !logged:
			c.Log.Info("Cluster API not installed in the seed (yet); only kubeconfig Secrets are cluster sources until it is")
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

func (c *ClusterAPI) discover() (bool, error) {
	res, err := c.Discovery.ServerResourcesForGroupVersion(clusterv1.GroupVersion.String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	for _, r := range res.APIResources {
		if r.Kind == "Cluster" {
			return true, nil
		}
	}
	return false, nil
}
