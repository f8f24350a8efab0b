package vips

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/shardgate/shardgate/pkg/clusteraccess"
	"github.com/shardgate/shardgate/pkg/controller/cistatus"
	"github.com/shardgate/shardgate/pkg/controllertest"
)

// TestNoNewVIPWhileTheClusterIsNotObserved: a cluster whose nodes cannot be read yet asks for
// nothing new (a new VIP could be an address its own nodes have, and a node's address never takes
// a held VIP away); once observed, it gets a VIP none of its nodes reports. On the previous
// build it was given 10.9.0.1 before its node reporting 10.9.0.1 was seen, and kept it.
func TestNoNewVIPWhileTheClusterIsNotObserved(t *testing.T) {
	seed := controllertest.Seed(t)
	ns := controllertest.Namespace(t, seed.Client)
	access := clusteraccess.NewFake()
	r := &Reconciler{Client: seed.Client, Access: access, Clock: clocktesting.NewFakePassiveClock(time.Now()), Board: cistatus.NewBoard(seed.Client).WriteThrough()}
	c := vipCI(t, seed.Client, ns, "c", 1)
	u := controllertest.UserCluster(access, c, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.9.0.1"}}}})
	u.Unsynced = true

	controllertest.Reconcile(t, r, c, 1)
	if got, _ := vipsOf(t, seed.Client, c); got != "" {
		t.Fatalf("VIPs given while the cluster's nodes were unknown: %s", got)
	}
	u.Unsynced = false
	controllertest.Reconcile(t, r, c, 1)
	if got, _ := vipsOf(t, seed.Client, c); got != "10.9.0.2#1@" {
		t.Fatalf("VIPs once observed: %q, want 10.9.0.2 (its node has 10.9.0.1)", got)
	}
}
