// Package certificates is the certificates controller: for every ClusterIngress whose TLS is on
// it keeps one cert-manager Certificate in Shardgate's certificate namespace (where tenants do not
// write) covering the cluster's and its shards' names, places new ACME orders within the seed's
// budget, and reports CertificateReady and status.certificate from what cert-manager, the ACME
// order and the issued Secret say (pkg/certs decides). The shard controller hands the key pair to
// the routers.
package certificates

import (
	"context"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controller/kit"
	"github.com/shardgate/shardgate/pkg/predicates"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers;clusterissuers;certificaterequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=acme.cert-manager.io,resources=orders;challenges,verbs=get;list;watch
// The ledger ConfigMap (get, create, update) is granted by a Role in the certificate namespace only
// (the chart's rbac.yaml).

// Config wires the certificates controller.
type Config struct {
	Kit kit.Config
	// CertManager discovers cert-manager's Certificates in the seed (Add adds it to the manager).
	CertManager *apidiscovery.API
	Concurrency int
	// Namespace is Shardgate's certificate namespace ("": clusters with TLS on say why they get
	// no certificate).
	Namespace string
	// OrdersPerWeek is the seed's budget of new ACME orders per week.
	OrdersPerWeek int
	// Board takes the controller's part of the status.
	Board *cistatus.Board
}

// Add registers the certificates controller. Certificates are watched once cert-manager is
// found; until then clusters with TLS on say CertManagerNotInstalled.
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), CertManager: cfg.CertManager, Clock: clock.RealClock{},
		Namespace: cfg.Namespace, OrdersPerWeek: cfg.OrdersPerWeek, Board: cfg.Board}
	c, err := kit.New(mgr, "certificates", cfg.Kit).Concurrency(cfg.Concurrency).
		// Spec (TLS settings, shards), deletion and the domain decide the names; the others'
		// status writes do not.
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged, predicates.ClaimsChanged,
			predicates.RunningFlavoursChanged))).
		Build(r)
	if err != nil {
		return err
	}
	cfg.CertManager.OnFound(func() {
		// cert-manager's status changes (issuing, ready, renewed) and edits wake the cluster a
		// Certificate is for; a Certificate whose cluster is gone is deleted on its first event.
		src := source.Kind(mgr.GetCache(), &cmapi.Certificate{}, handler.TypedEnqueueRequestsFromMapFunc(
			func(_ context.Context, c *cmapi.Certificate) []reconcile.Request {
				if owner, ok := certs.Owner(c); ok && c.Namespace == cfg.Namespace {
					return []reconcile.Request{{NamespacedName: owner}}
				}
				return nil
			}))
		if err := c.Watch(src); err != nil {
			mgr.GetLogger().Error(err, "watching cert-manager Certificates")
		}
	})
	return mgr.Add(cfg.CertManager)
}
