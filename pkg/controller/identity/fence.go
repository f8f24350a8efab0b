package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusterid"
)

// DomainFence: with several replicas, each decides from its own cache, and two clusters asking
// for one domain on two replicas could each be given it before either cache shows the other's
// status. So the API server, not a cache, judges a grant: a domain is given to a cluster that does
// not hold it yet only once the cluster holds the domain's Lease, "domain-<hash>" in the
// replicas' namespace, whose holderIdentity is the cluster (namespace/name). It is taken by
// creating it, or by updating it (optimistic lock) when the cluster named there no longer claims
// the domain by its live object (gone, or neither holding nor publishing under it, and not a
// grant still in flight): the Lease needs no release. One replica has no fence: its one cache and board see every grant
// it makes (and seed writes per cluster stay as they are).
type DomainFence struct {
	// Client creates and updates the Leases; Reader reads them and the claimants, uncached.
	Client    client.Client
	Reader    client.Reader
	Namespace string
	// ServedZones are the identity's: a request for a domain in another zone is no claim.
	ServedZones []string
}

// domainLeaseName is the domain's Lease: a hash, since a domain can be longer than a name allows
// and has dots a Lease name may keep but a label value may not.
func domainLeaseName(domain string) string {
	sum := sha256.Sum256([]byte(domain))
	return "domain-" + hex.EncodeToString(sum[:10])
}

// Take: whether the cluster self may be given domain (taking its Lease if it is free), and
// otherwise who has it.
func (f *DomainFence) Take(ctx context.Context, self types.NamespacedName, domain string) (bool, string, error) {
	me := self.String()
	key := client.ObjectKey{Namespace: f.Namespace, Name: domainLeaseName(domain)}
	l := &coordinationv1.Lease{}
	err := f.Reader.Get(ctx, key, l)
	if apierrors.IsNotFound(err) {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name,
			Labels:      map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue},
			Annotations: map[string]string{domainAnnotation: domain}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &me, RenewTime: f.now()}}
		if err := f.Client.Create(ctx, l); apierrors.IsAlreadyExists(err) {
			return false, "", nil // another cluster was first; the next pass says who
		} else if err != nil {
			return false, "", fmt.Errorf("take the Lease of %s: %w", domain, err)
		}
		return true, me, nil
	} else if err != nil {
		return false, "", err
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	if holder == me {
		// A grant again (a replica restarted before its status write, a retry): renewed, so the
		// in-flight window starts now, and by an update that fails if another cluster took the
		// Lease over meanwhile (then it lost the race).
		l.Spec.RenewTime = f.now()
		if err := f.Client.Update(ctx, l); apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return false, "", nil
		} else if err != nil {
			return false, "", fmt.Errorf("renew the Lease of %s: %w", domain, err)
		}
		return true, me, nil
	}
	if claims, err := f.claims(ctx, holder, domain, l.Spec.RenewTime); err != nil || claims {
		return false, holder, err
	}
	l.Spec.HolderIdentity, l.Spec.RenewTime = &me, f.now()
	if err := f.Client.Update(ctx, l); apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return false, "", nil
	} else if err != nil {
		return false, "", fmt.Errorf("take the Lease of %s: %w", domain, err)
	}
	return true, me, nil
}

// domainAnnotation says which domain a Lease is for (its name is a hash), for people.
const domainAnnotation = "shardgate.io/domain"

// grantInFlight is how long a cluster that took a domain's Lease but neither holds nor publishes
// under it yet keeps it: its grant's status write may still be on its way (a write waits up to
// 10 s behind queued record writes). After that a mere request protects nothing: a cluster that
// took the Lease and then lost the contest (a crash before its status write, an older cluster
// asking too, an ID moved away and back) must not keep the cluster the holder rule picks out.
const grantInFlight = 15 * time.Second

func (f *DomainFence) now() *metav1.MicroTime {
	t := metav1.NewMicroTime(time.Now())
	return &t
}

// claims: whether the cluster named holder (namespace/name) still claims domain by its live
// object: it holds it in status or its records are under it, or it asks for it and took the
// Lease within grantInFlight. A holder that names no cluster claims nothing.
func (f *DomainFence) claims(ctx context.Context, holder, domain string, taken *metav1.MicroTime) (bool, error) {
	k, ok := parseKey(holder)
	if !ok {
		return false, nil
	}
	ci := &v1alpha1.ClusterIngress{}
	if err := f.Reader.Get(ctx, k, ci); apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	asks, _ := clusterid.RequestedDomain(ci.Spec, f.ServedZones)
	inFlight := asks == domain && taken != nil && time.Since(taken.Time) < grantInFlight
	return ci.Status.Domain == domain || inFlight || slices.Contains(clusterid.PublishedDomains(ci.Status), domain),
		nil
}

func parseKey(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: ns, Name: name}, ok && ns != "" && name != ""
}

// Release deletes domain's Lease when it names self (a cluster that has just given the domain
// up), as it was read: one taken over meanwhile is not self's to delete. Leases stay as many as
// the domains held. A Lease of a cluster deleted since is taken over by the next grant instead.
func (f *DomainFence) Release(ctx context.Context, self types.NamespacedName, domain string) error {
	l := &coordinationv1.Lease{}
	err := f.Reader.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: domainLeaseName(domain)}, l)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != self.String() {
		return nil
	}
	err = f.Client.Delete(ctx, l, client.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("release the Lease of %s: %w", domain, err)
	}
	return nil
}
