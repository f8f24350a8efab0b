package agent

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Rendered is what Shardgate renders for a VIP shard: keepalived's configuration (one for every
// node) and the VIP list ("<address> <routerID>" per line).
type Rendered struct {
	Config, VIPs string
}

// Source is where the agent reads the rendered configuration.
type Source interface {
	// Latest is the configuration last read; false until one was.
	Latest() (Rendered, bool)
}

// Files reads the configuration from files each time (outside a pod: the failover tests). The
// VIP list is optional: without a Reporter nothing reads it.
type Files struct {
	Config, VIPs string
}

// Latest implements Source.
func (f Files) Latest() (Rendered, bool) {
	c, err := os.ReadFile(f.Config)
	if err != nil || len(c) == 0 {
		return Rendered{}, false
	}
	r := Rendered{Config: string(c)}
	if f.VIPs != "" {
		v, err := os.ReadFile(f.VIPs)
		if err != nil {
			return Rendered{}, false
		}
		r.VIPs = string(v)
	}
	return r, true
}

// ConfigMap follows the shard's ConfigMap through the API server (a get, then a watch of that one
// name): a change reaches the agent within a second, where the kubelet's refresh of a mounted
// volume takes a minute or more. What was read last stays until a newer version arrives (a
// ConfigMap that cannot be read or is gone changes nothing keepalived runs).
type ConfigMap struct {
	// NewClient builds the API client; each failure drops it and the next read builds a new one
	// on a new connection (see Reporter).
	NewClient func() (kubernetes.Interface, error)
	Namespace string
	Name      string

	mu     sync.Mutex
	latest Rendered
	read   bool
}

// Latest implements Source.
func (c *ConfigMap) Latest() (Rendered, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest, c.read
}

// Run follows the ConfigMap until ctx ends.
func (c *ConfigMap) Run(ctx context.Context) {
	var last string
	for ctx.Err() == nil {
		err := c.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		if err != nil && err.Error() != last {
			log.Printf("read the configuration: %v", err)
		}
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// follow reads the ConfigMap and then watches it for up to a minute (a bounded watch: a stream on
// a connection that died with the node's link ends, and the next one is a new connection).
func (c *ConfigMap) follow(ctx context.Context) error {
	cl, err := c.NewClient()
	if err != nil {
		return err
	}
	cms := cl.CoreV1().ConfigMaps(c.Namespace)
	sel := fields.OneTermEqualSelector("metadata.name", c.Name).String()
	listCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	list, err := cms.List(listCtx, metav1.ListOptions{FieldSelector: sel})
	cancel()
	if err != nil {
		return err
	}
	for i := range list.Items {
		c.set(&list.Items[i])
	}
	watchCtx, cancel := context.WithTimeout(ctx, 70*time.Second)
	defer cancel()
	w, err := cms.Watch(watchCtx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion,
		TimeoutSeconds: ptr.To[int64](60), AllowWatchBookmarks: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Added, watch.Modified:
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok {
				c.set(cm)
			}
		case watch.Error:
			return fmt.Errorf("watch: %v", apiStatus(ev.Object))
		}
	}
	return nil
}

func (c *ConfigMap) set(cm *corev1.ConfigMap) {
	if cm.Name != c.Name || cm.Data["keepalived.conf"] == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.latest, c.read = Rendered{Config: cm.Data["keepalived.conf"], VIPs: cm.Data["vips"]}, true
}

func apiStatus(o any) string {
	if s, ok := o.(*metav1.Status); ok {
		return string(s.Reason) + ": " + s.Message
	}
	return "unexpected event"
}
