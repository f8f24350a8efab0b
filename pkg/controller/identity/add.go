// Package identity is the identity controller: it decides each ClusterIngress' status.clusterID
// and status.domain, and says so in DomainAssigned (cistatus.Identity), as soon as the domain it
// asks for is valid and the cluster is its holder (pkg/clusterid), whether or not the user
// cluster can be observed. The DNS controller publishes records only for the domain decided here;
// the shard, allocation, claims, certificates and canary controllers read it through the board.
package identity

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusterid"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch
// (the domains' Leases are in the replicas' namespace: cmd/seed-controller's leases rule)

// Config wires the identity controller.
type Config struct {
	Kit kit.Config
	// ServedZones are the zones the seed's external-dns publishes (empty: any): a domain in
	// another zone is refused (ZoneNotServed), as the DNS controller refuses to publish it.
	ServedZones []string
	// Concurrency is how many clusters are decided at once.
	Concurrency int
	// Board takes this controller's part of the status (cistatus.Identity).
	Board *cistatus.Board
}

// Add registers the identity controller and the field indexes it lists by.
func Add(mgr ctrl.Manager, cfg Config) error {
	if err := AddIndexes(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	c := mgr.GetClient()
	r := &Reconciler{Client: c, ServedZones: cfg.ServedZones, Board: cfg.Board}
	if cfg.Kit.Replicas != nil {
		r.Fence = &DomainFence{Client: c, Reader: mgr.GetAPIReader(), Namespace: cfg.Kit.Replicas.Namespace,
			ServedZones: cfg.ServedZones}
	}
	return kit.New(mgr, "identity", cfg.Kit).Concurrency(cfg.Concurrency).
		// Its spec (the ID asked for) and its domain changed by anyone else (an older Shardgate).
		For(&v1alpha1.ClusterIngress{},
			builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged))).
		// A domain asked for, taken, given up, published under, moved away from or freed by a
		// deletion elsewhere changes who holds it.
		Watches(&v1alpha1.ClusterIngress{}, handler.EnqueueRequestsFromMapFunc(contenders(c)),
			builder.WithPredicates(domainsChanged)).
		Complete(r)
}

// Field indexes on ClusterIngresses: the domain each asks for, the one it holds, and every domain
// its records are at or under by its status (clusterid.PublishedDomains). Finding every claim to a
// domain is three indexed Lists.
const (
	requestedDomainIndex = "identity.requestedDomain"
	heldDomainIndex      = "identity.heldDomain"
	publishedDomainIndex = "identity.publishedDomain"
)

// AddIndexes adds the field indexes the controller lists by.
func AddIndexes(ctx context.Context, fi client.FieldIndexer) error {
	for name, f := range map[string]client.IndexerFunc{
		requestedDomainIndex: func(o client.Object) []string {
			return nonEmpty(clusterid.Asked(o.(*v1alpha1.ClusterIngress).Spec))
		},
		heldDomainIndex: func(o client.Object) []string {
			return nonEmpty(o.(*v1alpha1.ClusterIngress).Status.Domain)
		},
		publishedDomainIndex: func(o client.Object) []string {
			return clusterid.PublishedDomains(o.(*v1alpha1.ClusterIngress).Status)
		},
	} {
		if err := fi.IndexField(ctx, &v1alpha1.ClusterIngress{}, name, f); err != nil {
			return fmt.Errorf("index %s: %w", name, err)
		}
	}
	return nil
}

func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}

// domainsChanged passes ClusterIngress events that change a domain's claims: creation, deletion
// (a holder is gone), and updates of the domain asked for, the one held, or those its records are
// under. Other status writes (targets moving between nodes) do not pass.
var domainsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*v1alpha1.ClusterIngress)
		n, ok2 := e.ObjectNew.(*v1alpha1.ClusterIngress)
		return !ok1 || !ok2 || clusterid.Asked(o.Spec) != clusterid.Asked(n.Spec) ||
			o.Status.Domain != n.Status.Domain ||
			!slices.Equal(clusterid.PublishedDomains(o.Status), clusterid.PublishedDomains(n.Status))
	},
}

// contenders maps a ClusterIngress to the others that ask for, hold or publish under a domain it
// asks for, holds or publishes under (the old object's and the new one's, for an update: a
// domain given up is among them). Records never displace a status holder, but a holder is
// requeued all the same: one decision per domain, whoever's event it was.
func contenders(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		ci := o.(*v1alpha1.ClusterIngress)
		domains := append([]string{clusterid.Asked(ci.Spec), ci.Status.Domain}, clusterid.PublishedDomains(ci.Status)...)
		return listed(ctx, c, client.ObjectKeyFromObject(ci), domains, requestedDomainIndex, heldDomainIndex)
	}
}

// listed lists the ClusterIngresses indexed under any of domains in any of indexes, except self.
func listed(ctx context.Context, c client.Reader, self types.NamespacedName, domains []string,
	indexes ...string) []reconcile.Request {
	seen := map[types.NamespacedName]bool{self: true}
	var reqs []reconcile.Request
	for _, d := range domains {
		if d == "" {
			continue
		}
		for _, index := range indexes {
			list := &v1alpha1.ClusterIngressList{}
			if err := c.List(ctx, list, client.MatchingFields{index: d}); err != nil {
				continue // the cache has the index; a failed List is its context ending
			}
			for i := range list.Items {
				if k := client.ObjectKeyFromObject(&list.Items[i]); !seen[k] {
					seen[k] = true
					reqs = append(reqs, reconcile.Request{NamespacedName: k})
				}
			}
		}
	}
	return reqs
}
