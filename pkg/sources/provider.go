package sources

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/shardgate/shardgate/pkg/apidiscovery"
)

// Provider is one kind of cluster source: how the seed describes a user cluster of that kind,
// what to watch to hear of it, and where its kubeconfig is. The lifecycle and engagement
// controllers loop over a Registry of providers and never name a kind, so a kind is added by
// writing its provider and registering it in the seed controller.
type Provider interface {
	// Kind is the ClusterReference kind of the ClusterIngresses of its sources.
	Kind() string
	// Description names one source in status messages and logs ("Cluster API Cluster"); with
	// an "s" it names them all.
	Description() string
	// Discovery finds the provider's API in the seed; nil when the seed always serves it. Until
	// it is found the provider's sources are neither read nor watched, and nothing is removed
	// on their account (their absence cannot be known).
	Discovery() *apidiscovery.API
	// AddToScheme registers the types the provider reads.
	AddToScheme(s *runtime.Scheme) error
	// Watch is what to watch, a new one each call; nil when the provider has nothing to watch
	// (kubeconfig Secrets with no namespace to register clusters from).
	Watch() *Watch
	// Get describes the source whose ClusterIngress would be key; found is false when there is
	// none. An error is never a "gone": it is returned, and nothing is decided.
	Get(ctx context.Context, c client.Reader, key types.NamespacedName) (src Source, found bool, err error)
	// KubeconfigSecret is where the kubeconfig of the source named name, whose ClusterIngress is
	// in namespace, is, as of now; an *Unengageable error says why the cluster cannot be engaged
	// yet. c is the manager's cached client.
	KubeconfigSecret(ctx context.Context, c client.Reader, namespace, name string) (types.NamespacedName, error)
	// KubeconfigWatched: the kubeconfig Secret is in the manager's cache (which holds labelled
	// kubeconfig Secrets only) and its changes are watched. Otherwise it is read by name,
	// uncached (the Secrets beside it are never listed or cached), and read again every resync,
	// since nothing tells when it rotates.
	KubeconfigWatched() bool
}

// Watch is how the controllers hear of a provider's sources.
type Watch struct {
	// Object and List are empty instances of the watched type and of its list.
	Object client.Object
	List   client.ObjectList
	// Predicates pass the events that concern sources; ListOptions narrow a listing the same way.
	Predicates  []predicate.Predicate
	ListOptions []client.ListOption
	// Key maps a watched object to the key of its ClusterIngress; ok is false while it has none.
	Key func(client.Object) (key types.NamespacedName, ok bool)
}

// ObjectKey is Watch.Key for a source whose ClusterIngress has its namespace and name.
func ObjectKey(o client.Object) (types.NamespacedName, bool) {
	return client.ObjectKeyFromObject(o), true
}

// Keys lists the ClusterIngress key of every source in w's listing, in its order.
func (w *Watch) Keys(ctx context.Context, c client.Reader) ([]types.NamespacedName, error) {
	opts := append([]client.ListOption{client.UnsafeDisableDeepCopy}, w.ListOptions...) // read only, never kept
	if err := c.List(ctx, w.List, opts...); err != nil {
		return nil, err
	}
	var keys []types.NamespacedName
	err := meta.EachListItem(w.List, func(o runtime.Object) error {
		obj, ok := o.(client.Object)
		if !ok {
			return fmt.Errorf("%T is not an object", o)
		}
		if k, ok := w.Key(obj); ok {
			keys = append(keys, k)
		}
		return nil
	})
	return keys, err
}

// Unengageable is why a source's cluster cannot be engaged now: a SourceAvailable-style reason
// (v1alpha1.Reason*) and the message for status. It is reported, not retried at once: the
// source's watch or the kubeconfig resync brings the cluster back.
type Unengageable struct {
	Reason  string
	Message string
}

func (u *Unengageable) Error() string { return u.Message }

func unengageable(reason, format string, args ...any) *Unengageable {
	return &Unengageable{Reason: reason, Message: fmt.Sprintf(format, args...)}
}
