package certificates

import (
	"context"
	"errors"
	"fmt"
	"time"

	acmev1 "github.com/cert-manager/cert-manager/pkg/apis/acme/v1"
	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/apidiscovery"
	"github.com/shardgate/shardgate/pkg/certs"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/render"
)

// Reconciler keeps a ClusterIngress' cert-manager Certificate and reports CertificateReady and
// status.certificate. Gather, Decide (pkg/certs), apply.
type Reconciler struct {
	Client client.Client
	// SecretReader reads the issued Secret uncached: Shardgate may get Secrets, never list or
	// watch them across the seed.
	SecretReader client.Reader
	CertManager  *apidiscovery.API
	Clock        clock.PassiveClock
}

// While a certificate is not ready, the ACME order and challenges are looked at again this often
// (they are not watched: their progress only changes what the condition's message says).
const pendingRecheck = 10 * time.Second

// Reconcile applies the Certificate, decides CertificateReady, and patches status on change.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &v1alpha1.ClusterIngress{}
	if err := r.Client.Get(ctx, req.NamespacedName, ci); err != nil {
		if apierrors.IsNotFound(err) {
			forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if ci.DeletionTimestamp != nil {
		// The Certificate goes with its owner (garbage collection).
		forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	before := ci.Status.DeepCopy()
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
	if !equality.Semantic.DeepEqual(before, &ci.Status) {
		if perr := r.patchStatus(ctx, ci, before); perr != nil {
			return ctrl.Result{}, errors.Join(err, perr)
		}
	}
	return ctrl.Result{RequeueAfter: requeue}, err
}

func (r *Reconciler) patchStatus(ctx context.Context, ci *v1alpha1.ClusterIngress, before *v1alpha1.ClusterIngressStatus) error {
	return cistatus.Patch(ctx, r.Client, ci, before)
}

// turnOff deletes the Certificate of a cluster whose TLS is off and takes its status away. The
// issued Secret stays in the seed as cert-manager leaves it (with cert-manager's
// --enable-certificate-owner-ref it goes with the Certificate); the shard controller removes the
// routers' copy.
func (r *Reconciler) turnOff(ctx context.Context, ci *v1alpha1.ClusterIngress) error {
	forget(client.ObjectKeyFromObject(ci))
	meta.RemoveStatusCondition(&ci.Status.Conditions, v1alpha1.ConditionCertificateReady)
	ci.Status.Certificate = nil
	if !r.CertManager.Available() {
		return nil
	}
	c := &cmapi.Certificate{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: certs.CertificateName(ci.Name)}, c)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(c, ci) {
		return nil // not ours: never delete what someone else made
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, c))
}

// reconcileCertificate applies the Certificate and decides CertificateReady.
func (r *Reconciler) reconcileCertificate(ctx context.Context, ci *v1alpha1.ClusterIngress) (*metav1.Condition, time.Duration, error) {
	notReady := func(reason, msg string) *metav1.Condition {
		return &metav1.Condition{Type: v1alpha1.ConditionCertificateReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	if !r.CertManager.Available() {
		return notReady(v1alpha1.ReasonCertManagerMissing, "cert-manager's Certificates (cert-manager.io/v1) are not served by the seed"), pendingRecheck, nil
	}
	if ci.Status.Domain == "" {
		return notReady(v1alpha1.ReasonCertificateIssuing, "waiting for the cluster domain (see DNSPublished)"), 0, nil
	}
	names := certs.DNSNames(ci.Status.Domain, ci.Shards())
	cert, err := r.apply(ctx, ci, certs.Certificate(ci, names))
	if err != nil {
		return notReady(v1alpha1.ReasonIssuanceFailed, "writing the Certificate failed: "+apiErrorReason(err)), 0, err
	}
	obs, err := r.observe(ctx, ci, cert, names)
	if err != nil {
		return nil, 0, err // condition unchanged: a read failure says nothing about the certificate
	}
	cond := certs.Decide(obs)
	ci.Status.Certificate = certs.Status(cert.Name, names, obs.KeyPair, cert)
	record(client.ObjectKeyFromObject(ci), obs.KeyPair)
	requeue := pendingRecheck
	if cond.Status == metav1.ConditionTrue {
		// Look again when it expires, whatever cert-manager does meanwhile.
		requeue = max(obs.KeyPair.Leaf.NotAfter.Sub(obs.Now), time.Second)
	}
	return &cond, requeue, nil
}

// apply writes the Certificate when what Shardgate renders changed (its applied hash), and
// returns the current object.
func (r *Reconciler) apply(ctx context.Context, ci *v1alpha1.ClusterIngress, desired *cmapi.Certificate) (*cmapi.Certificate, error) {
	u, err := toUnstructured(desired)
	if err != nil {
		return nil, err
	}
	if err := render.StampHash(u); err != nil {
		return nil, err
	}
	current := &cmapi.Certificate{}
	err = r.Client.Get(ctx, client.ObjectKeyFromObject(desired), current)
	switch {
	case err == nil && !metav1.IsControlledBy(current, ci):
		return nil, fmt.Errorf("certificate %s exists and is not Shardgate's", desired.Name)
	case err == nil && current.Annotations[render.AppliedHashAnnotation] == u.GetAnnotations()[render.AppliedHashAnnotation]:
		return current, nil
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	}
	if err := r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(v1alpha1.FieldOwner), client.ForceOwnership); err != nil {
		return nil, err
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, current); err != nil {
		return nil, err
	}
	return current, nil
}

// observe gathers what Decide needs: the issuer, the newest request with its ACME order and
// challenges, and the issued key pair.
func (r *Reconciler) observe(ctx context.Context, ci *v1alpha1.ClusterIngress, cert *cmapi.Certificate, names []string) (certs.Observed, error) {
	obs := certs.Observed{Names: names, Certificate: cert, Now: r.Clock.Now()}
	var err error
	if obs.IssuerFound, obs.IssuerReady, err = r.issuer(ctx, ci); err != nil {
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
	err = r.SecretReader.Get(ctx, client.ObjectKey{Namespace: cert.Namespace, Name: cert.Spec.SecretName}, secret)
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
		err = r.Client.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: ref.Name}, is)
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

// toUnstructured turns the typed Certificate into an apply-ready object: no status, no
// creationTimestamp: null (server-side apply must not claim fields Shardgate never set).
func toUnstructured(c *cmapi.Certificate) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// apiErrorReason describes a seed API error by its status reason (the seed's own API server;
// its messages are safe, but the reason is all a condition needs).
func apiErrorReason(err error) string {
	if s, ok := err.(apierrors.APIStatus); ok {
		return string(s.Status().Reason) + ": " + s.Status().Message
	}
	return err.Error()
}
