package kubectlplugin

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/pkg/routekinds"
)

func ingress(annotations map[string]string, class string) *networkingv1.Ingress {
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Annotations: annotations}}
	if class != "" {
		ing.Spec.IngressClassName = ptr.To(class)
	}
	return ing
}

func TestExplain(t *testing.T) {
	dns := func(name string) ([]string, error) {
		switch name {
		case "web-shop-x.c1.example.test":
			return []string{"10.0.0.2", "10.0.0.1"}, nil
		}
		return nil, errors.New("no such host")
	}
	for _, tc := range []struct {
		name        string
		ing         *networkingv1.Ingress
		state       string
		reason      string
		hosts       int
		firstAnswer string
		firstOwned  bool
	}{
		{"allocated, default host resolves, own host does not yet",
			ingress(map[string]string{"shardgate.io/allocation": "Allocated", "shardgate.io/shard": "default",
				"shardgate.io/hosts": "web-shop-x.c1.example.test, shop.example.org", "shardgate.io/cname-target": "c1.example.test"}, "shardgate"),
			"Allocated", "", 2, "10.0.0.1,10.0.0.2", true},
		{"rejected says why and looks nothing up",
			ingress(map[string]string{"shardgate.io/allocation": "Rejected: host shop.example.org is served by Ingress other/web",
				"shardgate.io/hosts": "shop.example.org"}, "shardgate"),
			"Rejected", "host shop.example.org is served by Ingress other/web", 0, "", false},
		{"another controller's Ingress", ingress(nil, "nginx"), "Pending", "its ingressClassName is nginx, not shardgate or shardgate-haproxy: another controller serves it", 0, "", false},
		{"not decided yet", ingress(nil, ""), "Pending", "Shardgate has not allocated it yet (is the cluster engaged? see `kubectl shardgate status`)", 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := Explain(routekinds.Ingress{}, tc.ing, map[string]string{"default": "c1.example.test"}, dns)
			if e.State != tc.state || e.Reason != tc.reason || len(e.Hosts) != tc.hosts {
				t.Fatalf("%+v", e)
			}
			if tc.hosts == 0 {
				return
			}
			h := e.Hosts[0]
			if strings.Join(h.Addresses, ",") != tc.firstAnswer || h.UnderShardDomain != tc.firstOwned {
				t.Fatalf("first host %+v", h)
			}
			own := e.Hosts[1]
			if own.Resolves() || own.Error == "" || own.UnderShardDomain {
				t.Fatalf("own host %+v", own)
			}
			var b bytes.Buffer
			if err := write(&b, OutputHuman, e, func(w io.Writer) { printExplanation(w, "Ingress", e) }); err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Shard:", "10.0.0.1,10.0.0.2", "does not resolve (no such host)", "needs a CNAME to c1.example.test"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, b.String())
				}
			}
		})
	}
}

func TestStatusFrom(t *testing.T) {
	s := StatusFrom(&corev1.ConfigMap{Data: map[string]string{"clusterDomain": "c1.example.test", "https": "true", "shards": "internal,default",
		"shard.default.domain": "c1.example.test", "shard.default.cnameTarget": "c1.example.test",
		"shard.internal.domain": "internal.c1.example.test", "shard.internal.cnameTarget": "internal.c1.example.test"}})
	if s.ClusterDomain != "c1.example.test" || !s.HTTPS || len(s.Shards) != 2 || s.Shards[0].Name != "default" || s.Shards[1].CNAMETarget != "internal.c1.example.test" {
		t.Fatalf("%+v", s)
	}
	var b bytes.Buffer
	if err := write(&b, OutputYAML, s, nil); err != nil || !strings.Contains(b.String(), "cnameTarget: internal.c1.example.test") {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if err := write(&b, "xml", s, nil); err == nil {
		t.Fatal("xml accepted")
	}
}

func TestRouteName(t *testing.T) {
	kinds := routekinds.Registry{routekinds.Ingress{}}
	for arg, want := range map[string]string{"ingress/web": "web", "ing/web": "web", "ingresses.networking.k8s.io/web": "web",
		"Ingress.networking.k8s.io/web": "web", "web": "web", "svc/web": "", "ingress/": ""} {
		k, got, err := routeName(kinds, arg)
		if got != want || (want == "") != (err != nil) || want != "" && k.Name() != "Ingress" {
			t.Errorf("%q: %v %q %v", arg, k, got, err)
		}
	}
}
