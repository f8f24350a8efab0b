// Package certificates is the certificates controller: for every ClusterIngress whose TLS is on
// it keeps one cert-manager Certificate in the seed covering the cluster's and its shards' names,
// and reports CertificateReady and status.certificate from what cert-manager, the ACME order and
// the issued Secret say (pkg/certs decides). The shard controller hands the key pair to the
// routers.
package certificates

import (
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/controller/conflicts"
	"github.com/shardgate/shardgate/pkg/controller/predicates"
	"github.com/shardgate/shardgate/pkg/controller/sharding"
)

// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses,verbs=get;list;watch
// +kubebuilder:rbac:groups=shardgate.io,resources=clusteringresses/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=cert-manager.io,resources=issuers;clusterissuers;certificaterequests,verbs=get;list;watch
// +kubebuilder:rbac:groups=acme.cert-manager.io,resources=orders;challenges,verbs=get;list;watch

// Config wires the certificates controller.
type Config struct {
	// CertManager discovers cert-manager's Certificates in the seed (Add adds it to the manager).
	CertManager *apidiscovery.API
	Concurrency int
}

// Add registers the certificates controller. Certificates are watched once cert-manager is
// found; until then clusters with TLS on say CertManagerNotInstalled.
func Add(mgr ctrl.Manager, cfg Config) error {
	r := &Reconciler{Client: mgr.GetClient(), SecretReader: mgr.GetAPIReader(), CertManager: cfg.CertManager, Clock: clock.RealClock{}}
	c, err := ctrl.NewControllerManagedBy(mgr).Named("certificates").
		WithOptions(controller.Options{MaxConcurrentReconciles: cfg.Concurrency}).
		// Spec (TLS settings, shards), deletion and the domain decide the names; the others'
		// status writes do not.
		For(&v1alpha1.ClusterIngress{}, builder.WithPredicates(predicate.Or(predicates.MetadataOrSpecChanged, predicates.DomainChanged, predicates.ClaimsChanged))).
		WatchesRawSource(sharding.Changes()).
		Build(sharding.Only(conflicts.Retried("certificates", r)))
	if err != nil {
		return err
	}
	cfg.CertManager.OnFound(func() {
		// cert-manager's status changes (issuing, ready, renewed) wake the owning cluster.
		src := source.Kind(mgr.GetCache(), &cmapi.Certificate{},
			handler.TypedEnqueueRequestForOwner[*cmapi.Certificate](mgr.GetScheme(), mgr.GetRESTMapper(), &v1alpha1.ClusterIngress{}, handler.OnlyControllerOwner()))
		if err := c.Watch(src); err != nil {
			mgr.GetLogger().Error(err, "watching cert-manager Certificates")
		}
	})
	return mgr.Add(cfg.CertManager)
}
