package framework

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestClusterMux: two clusters served by one API server each see only their own nodes,
// namespaces and objects (the same names in both, renamed in the backend), through lists,
// gets, server-side apply and watches; a cluster's token opens no other cluster.
func TestClusterMux(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	backend := StartControlPlane(t, "mux", ControlPlaneOptions{})
	mux := StartClusterMux(t, backend)
	clients := map[string]client.WithWatch{}
	for _, id := range []string{"a", "b"} {
		kc, err := mux.AddCluster(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(kc)
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.NewWithWatch(cfg, client.Options{})
		if err != nil {
			t.Fatal(err)
		}
		clients[id] = c
		if err := mux.CreateNode(ctx, id, "n1", "127.0.9.1"); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shardgate-system"}}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	w, err := clients["a"].Watch(ctx, &corev1.ConfigMapList{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, id := range []string{"b", "a"} {
		cm := corev1ac.ConfigMap("info", "shardgate-system").WithData(map[string]string{"cluster": id})
		if err := clients[id].Apply(ctx, cm, client.FieldOwner("test"), client.ForceOwnership); err != nil {
			t.Fatalf("%s apply: %v", id, err)
		}
	}
	select {
	case ev := <-w.ResultChan():
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !ok || cm.Namespace != "shardgate-system" || cm.Data["cluster"] != "a" {
			t.Fatalf("cluster a's watch saw %s %+v", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
	for id, c := range clients {
		var nodes corev1.NodeList
		var nss corev1.NamespaceList
		var cms corev1.ConfigMapList
		if err := c.List(ctx, &nodes); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, &nss); err != nil {
			t.Fatal(err)
		}
		if err := c.List(ctx, &cms); err != nil {
			t.Fatal(err)
		}
		if len(nodes.Items) != 1 || nodes.Items[0].Name != id+"-n1" || len(nss.Items) != 5 || !slices.ContainsFunc(nss.Items, func(ns corev1.Namespace) bool { return ns.Name == "shardgate-system" }) ||
			len(cms.Items) != 1 || cms.Items[0].Data["cluster"] != id {
			t.Fatalf("cluster %s sees nodes %d, namespaces %v, configmaps %v", id, len(nodes.Items), nss.Items, cms.Items)
		}
		got := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "shardgate-system", Name: "info"}, got); err != nil || got.Data["cluster"] != id {
			t.Fatalf("cluster %s get: %v %v", id, got.Data, err)
		}
	}
	// a's token on b's path is refused.
	kc, _ := mux.Kubeconfig("a")
	forged := strings.Replace(string(kc), "/c/a", "/c/b", 1)
	c, err := ClientFromKubeconfig([]byte(forged), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &corev1.NodeList{}); err == nil || !strings.Contains(err.Error(), "provide credentials") {
		t.Fatalf("a's token opened b: %v", err)
	}
}
