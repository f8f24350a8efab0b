package certificates

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	acmev1 "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
)

// Reconciler keeps a ClusterIngress' cert-manager Certificate in Shardgate's certificate
// namespace and reports CertificateReady and status.certificate. Gather, decide (pkg/certs), apply.
type Reconciler struct {
	Client client.Client
	// APIReader reads uncached: the issued Secret (Shardgate may get Secrets, never list or watch
	// them across the seed) and the ledger of ACME orders (each order is decided on its newest
	// version).
	APIReader   client.Reader
	CertManager *apidiscovery.API
	Clock       clock.PassiveClock
	// Namespace is Shardgate's certificate namespace: the Certificates, their Secrets, the ledger
	// and a namespaced issuer live there, where no tenant writes.
	Namespace string
	// OrdersPerWeek is the seed's budget of new ACME orders (first certificates and new names)
	// per week; renewals of unchanged names are not counted.
	OrdersPerWeek int
	// Board takes CertificateReady and status.certificate (cistatus.Certificates).
	Board *cistatus.Board
}

// While a certificate is not ready, the ACME order and challenges are looked at again this often
// (they are not watched: their progress only changes what the condition's message says).
const pendingRecheck = 10 * time.Second

// A queued order is looked at again at least this often: an order ahead of it may have left
// the queue (its cluster deleted, its names back to what they were).
const queuedRecheck = time.Minute

// Reconcile applies the Certificate, decides CertificateReady, and posts its part of the status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, err
		}
		forget(req.NamespacedName)
		return ctrl.Result{}, r.release(ctx, req.NamespacedName) // the cluster is gone
	}
	if ci.DeletionTimestamp != nil {
		forget(req.NamespacedName)
		return ctrl.Result{}, r.release(ctx, req.NamespacedName)
	}
	r.Board.Overlay(ci)
	var (
		cond    *metav1.Condition
		requeue time.Duration
		err     error
	)
	if ci.Spec.TLS.On() {
		cond, requeue, err = r.reconcileCertificate(ctx, ci)
	} else {
		err = r.turnOff(ctx, ci)
	}
	if cond != nil {
		cond.ObservedGeneration = ci.Generation
		meta.SetStatusCondition(&ci.Status.Conditions, *cond)
	}
	r.Board.Post(ctx, ci, cistatus.Certificates)
	return ctrl.Result{RequeueAfter: requeue}, err
}

// turnOff deletes the Certificate of a cluster whose TLS is off (and one left in the cluster's
// own namespace from before the move) and takes its status away. The issued Secret stays in the
// seed as cert-manager leaves it (with cert-manager's --enable-certificate-owner-ref it goes with
// the Certificate); the shard controller removes the routers' copy.
func (r *Reconciler) turnOff(ctx context.Context, ci *v1alpha1.ClusterIngress) error {
	forget(client.ObjectKeyFromObject(ci))
	meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionCertificateReady)
	ci.Status.Certificate = nil
	if err := r.release(ctx, client.ObjectKeyFromObject(ci)); err != nil {
		return err
	}
	return r.dropLegacy(ctx, ci)
}

// release deletes the Certificate Shardgate keeps for the cluster key (TLS off, or the cluster
// gone: a Certificate in another namespace cannot be owned by the ClusterIngress, so garbage
// collection does not take it).
func (r *Reconciler) release(ctx context.Context, key types.NamespacedName) error {
	if !r.CertManager.Available() || r.Namespace == "" {
		return nil
	}
	c, err := r.current(ctx, key)
	if err != nil || c == nil {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, c))
}

// current is the cluster's Certificate in the certificate namespace (nil: none yet). One that is
// not Shardgate's for this cluster is an error: never written over, never deleted.
func (r *Reconciler) current(ctx context.Context, key types.NamespacedName) (*cmapi.Certificate, error) {
	c := &cmapi.Certificate{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: certs.CertificateName(key)}, c)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if owner, ok := certs.Owner(c); !ok || owner != key {
		return nil, fmt.Errorf("certificate %s/%s exists and is not Shardgate's for %s", c.Namespace, c.Name, key)
	}
	return c, nil
}

// dropLegacy deletes the Certificate the cluster had in its own namespace before Certificates
// moved to Shardgate's namespace: only once the new one is served (the routers keep the old key
// pair until then), and only if the ClusterIngress controls it.
func (r *Reconciler) dropLegacy(ctx context.Context, ci *v1alpha1.ClusterIngress) error {
	if !r.CertManager.Available() {
		return nil
	}
	c := &cmapi.Certificate{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: certs.LegacyCertificateName(ci.Name)}, c)
	if err != nil || !metav1.IsControlledBy(c, ci) {
		return client.IgnoreNotFound(err)
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, c))
}

// reconcileCertificate grants the cluster's names within the ACME budget, applies the
// Certificate and decides CertificateReady.
func (r *Reconciler) reconcileCertificate(ctx context.Context, ci *v1alpha1.ClusterIngress) (*metav1.Condition, time.Duration, error) {
	notReady := func(reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionCertificateReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	if !r.CertManager.Available() {
		return notReady(v1alpha1.ReasonCertManagerMissing, "cert-manager's Certificates (cert-manager.io/v1) are not served by the seed"), pendingRecheck, nil
	}
	if r.Namespace == "" {
		return notReady(v1alpha1.ReasonIssuerNotFound, "the controller has no namespace for certificates (--certificate-namespace)"), 0, nil
	}
	if ci.Status.Domain == "" {
		return notReady(v1alpha1.ReasonCertificateIssuing, "waiting for the cluster domain (see DNSPublished)"), 0, nil
	}
	key := client.ObjectKeyFromObject(ci)
	now := r.Clock.Now()
	wanted, leftOut := certs.Names(ci.Status.Domain, ci.Shards())
	current, err := r.current(ctx, key)
	if err != nil {
		return notReady(v1alpha1.ReasonIssuanceFailed, "reading the Certificate failed: "+apiErrorReason(err)), 0, err
	}
	granted := certs.Granted(current)
	var queued *certs.Queued
	if !slices.Equal(wanted, granted) {
		ok, at, err := r.grant(ctx, ci, wanted, granted == nil, now)
		switch {
		case err != nil:
			return notReady(v1alpha1.ReasonIssuanceQueued, "the seed's ACME order ledger: "+apiErrorReason(err)), 0, err
		case ok:
			granted = wanted
		default:
			queued = &certs.Queued{At: at, PerWeek: r.OrdersPerWeek}
		}
	}
	var cert *cmapi.Certificate
	if granted != nil {
		if cert, err = r.apply(ctx, current, certs.Certificate(ci, r.Namespace, granted)); err != nil {
			return notReady(v1alpha1.ReasonIssuanceFailed, "writing the Certificate failed: "+apiErrorReason(err)), 0, err
		}
	}
	obs, err := r.observe(ctx, ci, cert, granted, now)
	if err != nil {
		return nil, 0, err // condition unchanged: a read failure says nothing about the certificate
	}
	obs.Queued, obs.LeftOut = queued, leftOut
	cond := certs.Decide(obs)
	served := obs.KeyPair
	if served != nil && len(served.Beyond(granted)) > 0 {
		served = nil // not the cluster's: neither reported nor handed to the routers
	}
	ci.Status.Certificate = certs.Status(certs.CertificateName(key), granted, served, cert)
	record(key, served)
	switch {
	case queued != nil:
		return &cond, max(min(queued.At.Sub(now), queuedRecheck), time.Second), nil
	case cond.Status == metav1.ConditionTrue:
		// The move is done once the new certificate is served.
		if err := r.dropLegacy(ctx, ci); err != nil {
			return &cond, 0, err
		}
		// Look again when it expires, whatever cert-manager does meanwhile.
		return &cond, max(obs.KeyPair.Leaf.NotAfter.Sub(obs.Now), time.Second), nil
	}
	return &cond, pendingRecheck, nil
}

// apply creates the Certificate, or puts back anything in its spec, labels or annotations that
// differs from what Shardgate decides (a name, issuer or Secret added by hand included).
func (r *Reconciler) apply(ctx context.Context, current, desired *cmapi.Certificate) (*cmapi.Certificate, error) {
	if current == nil {
		return desired, r.Client.Create(ctx, desired, client.FieldOwner(v1alpha1.FieldOwner))
	}
	if !certs.Drifted(current, desired) {
		return current, nil
	}
	c := current.DeepCopy()
	c.Spec = desired.Spec
	c.Labels, c.Annotations = merge(c.Labels, desired.Labels), merge(c.Annotations, desired.Annotations)
	return c, r.Client.Update(ctx, c, client.FieldOwner(v1alpha1.FieldOwner))
}

func merge(into, from map[string]string) map[string]string {
	if into == nil {
		into = map[string]string{}
	}
	maps.Copy(into, from)
	return into
}

// observe gathers what Decide needs: the issuer, the newest request with its ACME order and
// challenges, and the issued key pair (cert nil: no Certificate yet, only the issuer).
func (r *Reconciler) observe(ctx context.Context, ci *v1alpha1.ClusterIngress, cert *cmapi.Certificate, names []string,
	now time.Time) (certs.Observed, error) {
	obs := certs.Observed{Names: names, Certificate: cert, Now: now}
	var err error
	if obs.IssuerFound, obs.IssuerReady, err = r.issuer(ctx, ci); err != nil || cert == nil {
		return obs, err
	}
	if obs.Request, err = r.newestRequest(ctx, cert); err != nil {
		return obs, err
	}
	if obs.Request != nil {
		if obs.Order, obs.Challenges, err = r.order(ctx, obs.Request); err != nil {
			return obs, err
		}
	}
	secret := &corev1.Secret{}
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: certs.CertificateName(client.ObjectKeyFromObject(ci))}, secret)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return obs, err
	default:
		obs.KeyPair, obs.KeyPairErr = certs.ParseKeyPair(secret.Data)
	}
	return obs, nil
}

func (r *Reconciler) issuer(ctx context.Context, ci *v1alpha1.ClusterIngress) (bool, *cmapi.IssuerCondition, error) {
	ref := ci.Spec.TLS.IssuerRef
	if ref.Group != v1alpha1.CertManagerGroup {
		return true, nil, nil // an external issuer: its readiness is its own business
	}
	var status cmapi.IssuerStatus
	var err error
	if ref.Kind == v1alpha1.KindClusterIssuer {
		is := &cmapi.ClusterIssuer{}
		err = r.Client.Get(ctx, client.ObjectKey{Name: ref.Name}, is)
		status = is.Status
	} else {
		is := &cmapi.Issuer{}
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: ref.Name}, is)
		status = is.Status
	}
	if apierrors.IsNotFound(err) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, err
	}
	for i := range status.Conditions {
		if status.Conditions[i].Type == cmapi.IssuerConditionReady {
			return true, &status.Conditions[i], nil
		}
	}
	return true, nil, nil
}

// newestRequest is the CertificateRequest of the Certificate with the highest revision.
func (r *Reconciler) newestRequest(ctx context.Context, cert *cmapi.Certificate) (*cmapi.CertificateRequest, error) {
	list := &cmapi.CertificateRequestList{}
	if err := r.Client.List(ctx, list, client.InNamespace(cert.Namespace)); err != nil {
		return nil, err
	}
	var newest *cmapi.CertificateRequest
	for i := range list.Items {
		cr := &list.Items[i]
		if !metav1.IsControlledBy(cr, cert) {
			continue
		}
		if newest == nil || revision(cr) > revision(newest) {
			newest = cr
		}
	}
	return newest, nil
}

func revision(cr *cmapi.CertificateRequest) int {
	var n int
	_, _ = fmt.Sscanf(cr.Annotations[cmapi.CertificateRequestRevisionAnnotationKey], "%d", &n)
	return n
}

// order is the ACME Order of a request and its Challenges (none for non-ACME issuers).
func (r *Reconciler) order(ctx context.Context, cr *cmapi.CertificateRequest) (*acmev1.Order, []acmev1.Challenge, error) {
	orders := &acmev1.OrderList{}
	if err := r.Client.List(ctx, orders, client.InNamespace(cr.Namespace)); err != nil {
		return nil, nil, err
	}
	var order *acmev1.Order
	for i := range orders.Items {
		if metav1.IsControlledBy(&orders.Items[i], cr) {
			order = &orders.Items[i]
		}
	}
	if order == nil {
		return nil, nil, nil
	}
	chs := &acmev1.ChallengeList{}
	if err := r.Client.List(ctx, chs, client.InNamespace(cr.Namespace)); err != nil {
		return nil, nil, err
	}
	var mine []acmev1.Challenge
	for _, ch := range chs.Items {
		if metav1.IsControlledBy(&ch, order) {
			mine = append(mine, ch)
		}
	}
	return order, mine, nil
}

// apiErrorReason describes a seed API error by its status reason (the seed's own API server;
// its messages are safe, but the reason is all a condition needs).
func apiErrorReason(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok {
		return string(s.Status().Reason) + ": " + s.Status().Message
	}
	return err.Error()
}
