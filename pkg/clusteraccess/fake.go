package clusteraccess

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

// Fake is an in-memory Registry for reconciler unit tests: each cluster is a FakeCluster whose
// reads and writes go to one client (usually controller-runtime's fake client) standing in for
// the user cluster.
type Fake struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName]*FakeCluster
	blocked  map[types.NamespacedName]State
	// Engaged records the kubeconfig each key was last engaged with, Settings the settings.
	Engaged  map[types.NamespacedName][]byte
	Settings map[types.NamespacedName]Settings
	subs     []chan event.GenericEvent
	// EngageErr, when set, is returned by Engage.
	EngageErr error
}

// NewFake returns an empty Fake.
func NewFake() *Fake {
	return &Fake{clusters: map[types.NamespacedName]*FakeCluster{}, blocked: map[types.NamespacedName]State{},
		Engaged: map[types.NamespacedName][]byte{}, Settings: map[types.NamespacedName]Settings{}}
}

// Add puts a cluster under key.
func (f *Fake) Add(key types.NamespacedName, c *FakeCluster) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.clusters[key] = c
}

// Get implements Access.
func (f *Fake) Get(key types.NamespacedName) (Cluster, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.clusters[key]
	if !ok {
		return nil, false
	}
	return c, true
}

// Blocked implements Access.
func (f *Fake) Blocked(key types.NamespacedName) (State, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.blocked[key]
	return s, ok
}

// Subscribe implements Access.
func (f *Fake) Subscribe(Change) <-chan event.GenericEvent {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan event.GenericEvent, 64)
	f.subs = append(f.subs, ch)
	return ch
}

// Notify sends a change event for key to every subscriber.
func (f *Fake) Notify(key types.NamespacedName) {
	f.mu.Lock()
	subs := f.subs
	f.mu.Unlock()
	for _, ch := range subs {
		ch <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
	}
}

// Engage implements Registry: it records the kubeconfig (checked like the real one) and settings.
func (f *Fake) Engage(key types.NamespacedName, kubeconfig []byte, s Settings) error {
	if f.EngageErr != nil {
		return f.EngageErr
	}
	if _, err := RESTConfig(kubeconfig, KubeconfigPolicy{}); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Engaged[key] = kubeconfig
	f.Settings[key] = s
	delete(f.blocked, key)
	return nil
}

// Block implements Registry.
func (f *Fake) Block(key types.NamespacedName, reason, message string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocked[key] = State{Phase: PhaseBlocked, Reason: reason, Message: message}
}

// Disengage implements Registry.
func (f *Fake) Disengage(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.clusters, key)
	delete(f.blocked, key)
	delete(f.Engaged, key)
	delete(f.Settings, key)
}

// FakeCluster is a Cluster backed by one client.
type FakeCluster struct {
	Client client.Client
	// St is the state reported; zero means Reachable.
	St   State
	Caps Capabilities
	// User is the identity (default "shardgate").
	User    string
	Pending time.Time
	// Unsynced makes the cluster report a cache that has not synced.
	Unsynced bool
	// Routes are the route kinds it reports (nil: Ingress alone, what every seed registers).
	Routes routekinds.Registry
	// UndecidedInputs is what Undecided reports.
	UndecidedInputs atomic.Uint64
}

// Undecided implements Cluster.
func (c *FakeCluster) Undecided() uint64 { return c.UndecidedInputs.Load() }

// State implements Cluster.
func (c *FakeCluster) State() State {
	if c.St.Phase == "" {
		return State{Phase: PhaseReachable, Reason: string(PhaseReachable)}
	}
	return c.St
}

// Capabilities implements Cluster.
func (c *FakeCluster) Capabilities() Capabilities { return c.Caps }

// Synced implements Cluster.
func (c *FakeCluster) Synced() bool { return !c.Unsynced }

// Observable implements Cluster.
func (c *FakeCluster) Observable() bool { return c.Synced() && c.State().Phase == PhaseReachable }

// Nodes implements Cluster.
func (c *FakeCluster) Nodes(ctx context.Context) ([]corev1.Node, error) {
	if c.Unsynced {
		return nil, ErrNotSynced
	}
	l := &corev1.NodeList{}
	if err := c.Client.List(ctx, l); err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Reader implements Cluster.
func (c *FakeCluster) Reader() client.Reader { return c.Client }

// RouteKinds implements Cluster.
func (c *FakeCluster) RouteKinds() routekinds.Registry {
	if c.Routes == nil {
		return routekinds.Registry{routekinds.Ingress{}}
	}
	return c.Routes
}

// Writer implements Cluster.
func (c *FakeCluster) Writer() client.Client { return c.Client }

// Identity implements Cluster.
func (c *FakeCluster) Identity(context.Context) (string, error) {
	if c.User == "" {
		return "shardgate", nil
	}
	return c.User, nil
}

// TakePendingChange implements Cluster.
func (c *FakeCluster) TakePendingChange() time.Time {
	t := c.Pending
	c.Pending = time.Time{}
	return t
}
