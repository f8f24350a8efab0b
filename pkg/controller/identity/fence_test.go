package identity

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// lagging is a replica's cache that has not seen hidden's latest change yet (watch latency): it
// lists the ClusterIngresses without it.
type lagging struct {
	client.Client
	hidden types.NamespacedName
}

func (l lagging) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if cis, ok := list.(*v1alpha1.ClusterIngressList); ok {
		out := cis.Items[:0]
		for _, c := range cis.Items {
			if client.ObjectKeyFromObject(&c) != l.hidden {
				out = append(out, c)
			}
		}
		cis.Items = out
	}
	return nil
}

// replica is the identity controller of one of several replicas: its own board, a cache (c), and
// the domain fence in the API server.
func (e *env) replica(c client.Client) *Reconciler {
	return &Reconciler{Client: c, ServedZones: e.r.ServedZones, Board: cistatus.NewBoard(e.c).WriteThrough(),
		Fence: &DomainFence{Client: e.c, Reader: e.c, Namespace: e.ns, ServedZones: e.r.ServedZones}}
}

// TestTwoReplicasNeverGrantOneDomainTwice (the identity review's finding): clusters older and
// younger are placed on two replicas. older is changed to ask for race while younger, new, asks
// for it too; younger's replica has not seen older's change yet. Each replica decides from its
// own cache and board — without the fence both gave race away. With it, the API server judges:
// the first to take race's Lease has it, the other is told who holds it.
func TestTwoReplicasNeverGrantOneDomainTwice(t *testing.T) {
	e := newEnv(t)
	older := e.cluster("older", "before")
	e.until(older, domain("before"), v1alpha1.ReasonDomainHeld, "")
	time.Sleep(1100 * time.Millisecond)
	younger := e.cluster("younger", "race")
	e.askFor(older, "race")
	time.Sleep(500 * time.Millisecond)

	r1, r2 := e.replica(e.r.Client), e.replica(lagging{Client: e.r.Client, hidden: older})
	if _, err := r2.Reconcile(e.ctx, reqFor(younger)); err != nil {
		t.Fatal(err)
	}
	if _, err := r1.Reconcile(e.ctx, reqFor(older)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if a, b := e.get(older).Status.Domain, e.get(younger).Status.Domain; a == b {
		t.Fatalf("two replicas gave %q to both %s and %s", a, older, younger)
	}
	if got := e.get(younger).Status.Domain; got != domain("race") {
		t.Fatalf("the first to take the Lease has it: younger holds %q", got)
	}
	c := meta.FindStatusCondition(e.get(older).Status.Conditions, v1alpha1.ConditionDomainAssigned)
	if e.get(older).Status.Domain != domain("before") || c == nil || c.Reason != v1alpha1.ReasonClusterIDConflict ||
		!strings.Contains(c.Message, younger.String()) {
		t.Fatalf("older keeps its domain and is told who holds race: %q %+v", e.get(older).Status.Domain, c)
	}

	// The Lease names a cluster that no longer claims the domain (younger moved on): taken over.
	e.askFor(younger, "moved-on")
	controllertest.ReconcileUntil(t, r2, younger, func() (bool, string) {
		got := e.get(younger).Status.Domain
		return got == domain("moved-on"), "younger holds " + got
	})
	controllertest.ReconcileUntil(t, r1, older, func() (bool, string) {
		got := e.get(older).Status.Domain
		return got == domain("race"), "older holds " + got
	})
}

// TestDomainLeaseOfAGoneClusterIsTakenOver: the Lease names a cluster deleted since (or a holder
// that names no cluster): it holds nothing.
func TestDomainLeaseOfAGoneClusterIsTakenOver(t *testing.T) {
	e := newEnv(t)
	f := &DomainFence{Client: e.c, Reader: e.c, Namespace: e.ns, ServedZones: []string{zone}}
	gone := types.NamespacedName{Namespace: e.ns, Name: "gone"}
	if ok, _, err := f.Take(e.ctx, gone, domain("g")); !ok || err != nil {
		t.Fatalf("a free domain's Lease: %v %v", ok, err)
	}
	me := e.cluster("me", "g")
	if ok, holder, err := f.Take(e.ctx, me, domain("g")); !ok || err != nil || holder != me.String() {
		t.Fatalf("the Lease of a cluster that does not exist is taken over: %v %q %v", ok, holder, err)
	}
	other := e.cluster("other", "g")
	if ok, holder, err := f.Take(e.ctx, other, domain("g")); ok || err != nil || holder != me.String() {
		t.Fatalf("a Lease whose cluster asks for the domain is not: %v %q %v", ok, holder, err)
	}
}

func reqFor(k types.NamespacedName) ctrl.Request { return ctrl.Request{NamespacedName: k} }
