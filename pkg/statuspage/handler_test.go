package statuspage

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/clusterview"
)

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func cluster(ns, name string, ready bool, reason string) *v1alpha1.ClusterIngress {
	status := metav1.ConditionTrue
	if !ready {
		status = metav1.ConditionFalse
	}
	return &v1alpha1.ClusterIngress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1alpha1.ClusterIngressSpec{ClusterRef: v1alpha1.ClusterReference{Kind: "Secret", Name: name}, Profile: "default", ClusterID: name},
		Status: v1alpha1.ClusterIngressStatus{ClusterID: name, Domain: name + ".example.test", Targets: []string{"10.0.0.1"},
			Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: status, Reason: reason,
				Message: "<script>alert(1)</script>", LastTransitionTime: metav1.NewTime(now.Add(-3 * time.Minute))}}},
	}
}

func server(t *testing.T, objs ...client.Object) *httptest.Server {
	t.Helper()
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	h, err := NewHandler(fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build())
	if err != nil {
		t.Fatal(err)
	}
	h.Now = func() time.Time { return now }
	srv := httptest.NewServer(h.Routes())
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestListPage(t *testing.T) {
	srv := server(t, cluster("team-a", "alpha", true, "Ready"), cluster("team-b", "beta", false, "NotReady"))
	code, body, hdr := get(t, srv.URL+"/")
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("%d %s %s", code, hdr.Get("Content-Type"), body)
	}
	if !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("no CSP: %q", hdr.Get("Content-Security-Policy"))
	}
	for _, want := range []string{`data-cluster="team-a/alpha"`, `data-cluster="team-b/beta"`, "alpha.example.test", `<span id="not-ready" class="bad">1 not ready</span>`, `href="/clusters/team-b/beta"`} {
		if !strings.Contains(body, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Not ready first.
	if strings.Index(body, "team-b/beta") > strings.Index(body, "team-a/alpha") {
		t.Error("the cluster that is not ready is not listed first")
	}
	// A condition message is tenant-influenced text: escaped, never markup.
	if strings.Contains(body, "<script>") {
		t.Error("a message was rendered as markup")
	}
}

func TestListFilterAndPages(t *testing.T) {
	var objs []client.Object
	for i := range 120 {
		objs = append(objs, cluster(fmt.Sprintf("ns-%03d", i), "c", true, "Ready"))
	}
	srv := server(t, objs...)
	_, body, _ := get(t, srv.URL+"/?page=2&size=50")
	if strings.Count(body, "data-cluster=") != 50 || !strings.Contains(body, "page 2 of 3") || !strings.Contains(body, `href="?size=50&amp;page=3"`) {
		t.Fatalf("page 2: rows %d", strings.Count(body, "data-cluster="))
	}
	_, body, _ = get(t, srv.URL+"/?q=ns-11")
	if strings.Count(body, "data-cluster=") != 10 {
		t.Fatalf("search ns-11: rows %d", strings.Count(body, "data-cluster="))
	}
	code, js, _ := get(t, srv.URL+"/api/v1/clusters?problems=1")
	var p clusterview.Page
	if err := json.Unmarshal([]byte(js), &p); err != nil || code != http.StatusOK {
		t.Fatalf("%d %v", code, err)
	}
	if p.Total != 120 || p.Matching != 0 || p.NotReady != 0 {
		t.Fatalf("json: %+v", p)
	}
}

func TestClusterPage(t *testing.T) {
	srv := server(t, cluster("team-a", "alpha", true, "Ready"))
	code, body, _ := get(t, srv.URL+"/clusters/team-a/alpha")
	if code != http.StatusOK || !strings.Contains(body, "*.alpha.example.test") || !strings.Contains(body, "3m ago") {
		t.Fatalf("%d\n%s", code, body)
	}
	code, js, _ := get(t, srv.URL+"/api/v1/clusters/team-a/alpha")
	var c clusterview.Cluster
	if err := json.Unmarshal([]byte(js), &c); err != nil || code != http.StatusOK || c.Domain != "alpha.example.test" {
		t.Fatalf("%d %v %+v", code, err, c)
	}
	if code, _, _ := get(t, srv.URL+"/clusters/team-a/nope"); code != http.StatusNotFound {
		t.Fatalf("missing cluster: %d", code)
	}
}

// TestClusterPageShowsLoad: a shard's reported load, its state and what was clamped are on the
// page and in the JSON; a shard that reports none shows a dash.
func TestClusterPageShowsLoad(t *testing.T) {
	ci := cluster("team-a", "alpha", true, "Ready")
	ci.Spec.Shards = v1alpha1.ResolveShards([]v1alpha1.ShardSpec{{Name: "default"}, {Name: "quiet"}})
	ci.Status.ShardLoad = []v1alpha1.ShardLoadStatus{{Shard: "default", State: v1alpha1.LoadSaturated, UtilizationPercent: 240,
		RequestsPerSecond: 48, ReportingRouters: 2, Clamped: "figures out of bounds, clamped (p: rps)"}}
	srv := server(t, ci)
	_, body, _ := get(t, srv.URL+"/clusters/team-a/alpha")
	if !strings.Contains(body, `<span class="bad">Saturated</span> 240% · 48 req/s · 2 reporting · figures out of bounds`) {
		t.Errorf("page lacks the load:\n%s", body)
	}
	_, js, _ := get(t, srv.URL+"/api/v1/clusters/team-a/alpha")
	var c clusterview.Cluster
	if err := json.Unmarshal([]byte(js), &c); err != nil || c.Shards[0].Load == nil || c.Shards[0].Load.UtilizationPercent != 240 ||
		c.Shards[1].Load != nil {
		t.Fatalf("%v %+v", err, c.Shards)
	}
}

// TestClusterPageCountsRoutesPerKind: the cluster page and its JSON count routes per kind.
func TestClusterPageCountsRoutesPerKind(t *testing.T) {
	ci := cluster("team-a", "alpha", true, "Ready")
	ci.Status.Routes, ci.Status.RejectedRoutes = 5, 1
	ci.Status.RouteKinds = []v1alpha1.RouteKindCount{{Kind: "Ingress", Routes: 3, Rejected: 1}, {Kind: "HTTPRoute", Routes: 2}}
	srv := server(t, ci)
	_, body, _ := get(t, srv.URL+"/clusters/team-a/alpha")
	if want := "5 allocated, 1 rejected (Ingress: 3 allocated, 1 rejected, HTTPRoute: 2 allocated, 0 rejected)"; !strings.Contains(body, want) {
		t.Errorf("page lacks %q:\n%s", want, body)
	}
	_, js, _ := get(t, srv.URL+"/api/v1/clusters/team-a/alpha")
	var c clusterview.Cluster
	if err := json.Unmarshal([]byte(js), &c); err != nil || fmt.Sprint(c.RouteKinds) != "[{Ingress 3 1} {HTTPRoute 2 0}]" {
		t.Fatalf("%v %+v", err, c.RouteKinds)
	}
}
