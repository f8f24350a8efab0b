package clusteraccess

import (
	"context"
	"errors"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// engagedView is the Cluster of an engagement.
type engagedView struct{ c *engaged }

// State of the cluster now.
func (c engagedView) State() State {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.state
}

// Capabilities the cluster's API server offers (zero before the first contact).
func (c engagedView) Capabilities() Capabilities {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.caps
}

// Synced reports whether the cache has completed its first list, so reads are complete.
func (c engagedView) Synced() bool {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.synced
}

// Observable reports whether decisions may be made from this cluster's cache now: synced, and
// the API server answers. Controllers change nothing in a cluster they cannot observe.
func (c engagedView) Observable() bool {
	return c.Synced() && c.State().Phase == PhaseReachable
}

// ErrNotSynced is returned by reads before the cache has synced.
var ErrNotSynced = errors.New("user cluster cache not synced yet")

// Nodes lists the cached (trimmed) nodes. It never blocks on the network.
func (c engagedView) Nodes(ctx context.Context) ([]corev1.Node, error) {
	if !c.Synced() {
		return nil, ErrNotSynced
	}
	list := &corev1.NodeList{}
	if err := c.Reader().List(ctx, list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// Reader reads the cluster's cached Nodes, routes and Shardgate-managed objects. Reads of other
// kinds fail, and so does every read before the first contact. Check Synced first: before the
// first sync a read is incomplete.
func (c engagedView) Reader() client.Reader {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	if c.c.cache == nil {
		return notConnected{}
	}
	return c.c.cache
}

// Undecided implements Cluster.
func (c engagedView) Undecided() uint64 { return c.c.undecided.Load() }

// RouteKinds implements Cluster: the engager's route kinds the cluster serves (nil before the
// first contact).
func (c engagedView) RouteKinds() routekinds.Registry {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.routes
}

// Writer writes to the cluster's API server directly (server-side apply, updates, deletes),
// each request bounded by the engager's WriteTimeout. Nil before the first contact: callers
// check Observable first.
func (c engagedView) Writer() client.Client {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	return c.c.writer
}

// Identity is the user name Shardgate's credentials have in the cluster (from a
// SelfSubjectReview), asked once per engagement. Its error is a fixed description.
func (c engagedView) Identity(ctx context.Context) (string, error) {
	c.c.mu.Lock()
	id, w := c.c.identity, c.c.writer
	c.c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	if w == nil {
		return "", ErrNotSynced
	}
	r := &authenticationv1.SelfSubjectReview{}
	if err := w.Create(ctx, r); err != nil {
		return "", DescribeError("who am I (SelfSubjectReview)", err)
	}
	c.c.mu.Lock()
	c.c.identity = r.Status.UserInfo.Username
	c.c.mu.Unlock()
	return r.Status.UserInfo.Username, nil
}

// TakePendingChange returns when the oldest node change not yet published was observed, and
// clears it. Zero when there is none.
func (c engagedView) TakePendingChange() time.Time {
	c.c.mu.Lock()
	defer c.c.mu.Unlock()
	t := c.c.pendingFrom
	c.c.pendingFrom = time.Time{}
	return t
}

// notConnected is the reader of a cluster whose first contact has not succeeded yet.
type notConnected struct{}

func (notConnected) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return ErrNotSynced
}

func (notConnected) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return ErrNotSynced
}
