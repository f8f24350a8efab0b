package certificates

import (
	"context"
	"slices"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	cmmeta "github.com/cert-manager/cert-manager/pkg/apis/meta/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/certs"
)

// The ledger of the seed's new ACME orders: one ConfigMap in the certificate namespace, written
// with its resourceVersion, so replicas sharing a seed spend one budget and two writers of one
// version cannot both take its last order.
const (
	LedgerName = "shardgate-acme-orders"
	ledgerKey  = "orders"
)

// grant decides whether the cluster may order a certificate for wanted now. A renewal (the names
// its Certificate in the cluster's own namespace already holds, from before the move) and an
// order already in the ledger cost nothing; anything else takes its turn in the seed's budget
// (certs.Schedule) and is recorded before the Certificate asks for it. Not granted: at is when
// its turn comes.
func (r *Reconciler) grant(ctx context.Context, ci *v1alpha1.ClusterIngress, wanted []string, first bool,
	now time.Time) (ok bool, at time.Time, err error) {
	key := client.ObjectKeyFromObject(ci).String()
	legacy := &cmapi.Certificate{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: certs.LegacyCertificateName(ci.Name)}, legacy)
	if err != nil && !apierrors.IsNotFound(err) {
		return false, at, err
	}
	if err == nil && renews(legacy, ci, wanted) {
		return true, at, nil
	}
	ledger, orders, err := r.ledger(ctx)
	if err != nil {
		return false, at, err
	}
	if certs.Ordered(orders, key, certs.NamesKey(wanted), now) {
		return true, at, nil
	}
	waiting, err := r.waiting(ctx, orders, now)
	if err != nil {
		return false, at, err
	}
	if !slices.ContainsFunc(waiting, func(w certs.Waiting) bool { return w.Cluster == key }) {
		waiting = append(waiting, certs.Waiting{Cluster: key, Created: ci.CreationTimestamp.Time, First: first}) // the cache lags
	}
	if at = certs.Schedule(r.OrdersPerWeek, orders, waiting, now)[key]; at.After(now) {
		return false, at, nil
	}
	orders = append(orders, certs.Order{Cluster: key, Names: certs.NamesKey(wanted), At: now})
	ledger.Data = map[string]string{ledgerKey: certs.FormatLedger(orders, now)}
	if ledger.ResourceVersion == "" {
		err = r.Client.Create(ctx, ledger, client.FieldOwner(v1alpha1.FieldOwner))
	} else {
		err = r.Client.Update(ctx, ledger, client.FieldOwner(v1alpha1.FieldOwner))
	}
	return err == nil, at, err
}

// ledger reads the newest ledger (a new, empty one when there is none).
func (r *Reconciler) ledger(ctx context.Context) (*corev1.ConfigMap, []certs.Order, error) {
	cm := &corev1.ConfigMap{}
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: LedgerName}, cm)
	if apierrors.IsNotFound(err) {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: LedgerName,
			Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}}}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	orders, err := certs.ParseLedger(cm.Data[ledgerKey])
	return cm, orders, err
}

// waiting are the seed's clusters whose certificates need a new order (by every replica's
// clusters: the budget is the seed's), from the cache.
func (r *Reconciler) waiting(ctx context.Context, orders []certs.Order, now time.Time) ([]certs.Waiting, error) {
	cis := &v1alpha1.ClusterIngressList{}
	if err := r.Client.List(ctx, cis); err != nil {
		return nil, err
	}
	list := &cmapi.CertificateList{}
	if err := r.Client.List(ctx, list, client.MatchingLabels{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}); err != nil {
		return nil, err
	}
	byKey := make(map[client.ObjectKey]*cmapi.Certificate, len(list.Items))
	for i := range list.Items {
		byKey[client.ObjectKeyFromObject(&list.Items[i])] = &list.Items[i]
	}
	var out []certs.Waiting
	for i := range cis.Items {
		ci := &cis.Items[i]
		if !ci.Spec.TLS.On() || ci.Status.Domain == "" || ci.DeletionTimestamp != nil {
			continue
		}
		key := client.ObjectKeyFromObject(ci)
		wanted, _ := certs.Names(ci.Status.Domain, ci.Shards())
		var granted []string
		if c := byKey[client.ObjectKey{Namespace: r.Namespace, Name: certs.CertificateName(key)}]; c != nil {
			if owner, ok := certs.Owner(c); ok && owner == key {
				granted = certs.Granted(c)
			}
		}
		if slices.Equal(granted, wanted) {
			continue
		}
		if certs.Ordered(orders, key.String(), certs.NamesKey(wanted), now) {
			continue
		}
		legacy := byKey[client.ObjectKey{Namespace: ci.Namespace, Name: certs.LegacyCertificateName(ci.Name)}]
		if legacy != nil && renews(legacy, ci, wanted) {
			continue
		}
		out = append(out, certs.Waiting{Cluster: key.String(), Created: ci.CreationTimestamp.Time, First: granted == nil})
	}
	return out, nil
}

// renews reports whether ordering wanted for the cluster renews what its Certificate from before
// the move (in the cluster's own namespace, controlled by its ClusterIngress) was issued for: the
// same names, Ready. ACME servers do not count a renewal of an identical set of names.
func renews(legacy *cmapi.Certificate, ci *v1alpha1.ClusterIngress, wanted []string) bool {
	if !metav1.IsControlledBy(legacy, ci) || !certificateReady(legacy) {
		return false
	}
	// Only what Shardgate itself recorded as issued before the move counts: whoever writes the
	// cluster's namespace can create a Ready Certificate of that name (a self-signed Issuer of
	// its own) for any names, but not the ClusterIngress' status. Once the move is recorded
	// (status names the new Certificate) no legacy Certificate is a renewal any more.
	st := ci.Status.Certificate
	if st == nil || st.Name != legacy.Name || st.SerialNumber == "" {
		return false
	}
	recorded := slices.Compact(slices.Sorted(slices.Values(st.DNSNames)))
	names := slices.Compact(slices.Sorted(slices.Values(legacy.Spec.DNSNames)))
	return slices.Equal(names, wanted) && slices.Equal(recorded, wanted)
}

func certificateReady(c *cmapi.Certificate) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == cmapi.CertificateConditionReady {
			return cond.Status == cmmeta.ConditionTrue
		}
	}
	return false
}
