package clustermetrics

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func clusterIngress(ns, name string, conds ...metav1.Condition) *v1alpha1.ClusterIngress {
	ci := &v1alpha1.ClusterIngress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	ci.Status.Conditions = conds
	return ci
}

func cond(typ string, s metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: s, Reason: reason}
}

func TestConditions(t *testing.T) {
	for _, tc := range []struct {
		name string
		cis  []v1alpha1.ClusterIngress
		want []Condition
	}{
		{name: "no clusters"},
		{name: "a cluster without status", cis: []v1alpha1.ClusterIngress{*clusterIngress("a", "c")}},
		{
			name: "each condition with its status and reason",
			cis: []v1alpha1.ClusterIngress{*clusterIngress("a", "c",
				cond(v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable),
				cond(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonReady))},
			want: []Condition{{"a/c", "ClusterReachable", "False", "Unreachable"}, {"a/c", "Ready", "True", "Ready"}},
		},
		{
			name: "a type twice keeps the first (one series twice would fail the scrape)",
			cis: []v1alpha1.ClusterIngress{*clusterIngress("a", "c",
				cond(v1alpha1.ConditionReady, metav1.ConditionFalse, "One"),
				cond(v1alpha1.ConditionReady, metav1.ConditionTrue, "Two"))},
			want: []Condition{{"a/c", "Ready", "False", "One"}},
		},
		{
			name: "a status outside True and False reads as Unknown",
			cis:  []v1alpha1.ClusterIngress{*clusterIngress("a", "c", cond(v1alpha1.ConditionReady, "Maybe", "Edited"))},
			want: []Condition{{"a/c", "Ready", "Unknown", "Edited"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Conditions(tc.cis)
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("sample %d: got %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCollectorExportsEveryCluster(t *testing.T) {
	r := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(
		clusterIngress("a", "one", cond(v1alpha1.ConditionClusterReachable, metav1.ConditionFalse, v1alpha1.ReasonUnreachable)),
		clusterIngress("b", "two", cond(v1alpha1.ConditionClusterReachable, metav1.ConditionTrue, v1alpha1.ReasonReachable)),
	).Build()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&Collector{Reader: r})
	want := `
# HELP shardgate_cluster_condition 1 for each condition of a user cluster's ClusterIngress, with its status and reason (cluster = namespace/name).
# TYPE shardgate_cluster_condition gauge
shardgate_cluster_condition{cluster="a/one",condition="ClusterReachable",reason="Unreachable",status="False"} 1
shardgate_cluster_condition{cluster="b/two",condition="ClusterReachable",reason="Reachable",status="True"} 1
# HELP shardgate_clusters ClusterIngresses in the seed: the user clusters Shardgate works for.
# TYPE shardgate_clusters gauge
shardgate_clusters 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

func TestAnUnreadableCacheFailsNoScrape(t *testing.T) {
	r := fake.NewClientBuilder().WithScheme(scheme(t)).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("cache not synced")
		},
	}).Build()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&Collector{Reader: r})
	other := prometheus.NewGauge(prometheus.GaugeOpts{Name: "other", Help: "another metric"})
	other.Set(3)
	reg.MustRegister(other)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("the scrape failed: %v", err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != "other" {
		t.Errorf("gathered %v, want only the other metric", mfs)
	}
}

// With replicas, a replica counts the ClusterIngresses whose fence it holds: a fence of a source
// without a ClusterIngress (a Cluster no profile selects, a deleted cluster) is no owned cluster,
// or it would hide a cluster no replica owns (review finding).
func TestOwnedCountsClusterIngressesOnly(t *testing.T) {
	r := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(clusterIngress("a", "one"), clusterIngress("a", "two")).Build()
	held := map[string]bool{"a/one": true, "s/unselected-capi-cluster": true, "s/deleted": true}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(&Collector{Reader: r, Owns: func(k types.NamespacedName) bool { return held[k.String()] }})
	if err := testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP shardgate_sharding_owned_clusters ClusterIngresses whose fence this replica holds (with --sharding): summed over the replicas, shardgate_clusters when every cluster has one owner.
# TYPE shardgate_sharding_owned_clusters gauge
shardgate_sharding_owned_clusters 1
`), "shardgate_sharding_owned_clusters"); err != nil {
		t.Error(err)
	}
	// Without --sharding there is no owner to count: no sample, rather than a 0 that would page.
	reg = prometheus.NewPedanticRegistry()
	reg.MustRegister(&Collector{Reader: r})
	if n, err := testutil.GatherAndCount(reg, "shardgate_sharding_owned_clusters"); err != nil || n != 0 {
		t.Errorf("without Owns: %d samples, %v", n, err)
	}
}
