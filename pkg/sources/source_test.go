package sources

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

func profile(name string, age time.Duration, sel map[string]string) v1alpha1.IngressProfile {
	return v1alpha1.IngressProfile{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(1e9, 0).Add(-age))},
		Spec:       v1alpha1.IngressProfileSpec{ClusterSelector: metav1.LabelSelector{MatchLabels: sel}},
	}
}

func TestSelectProfile(t *testing.T) {
	all := profile("all", time.Hour, nil)
	prodOld := profile("prod-old", 2*time.Hour, map[string]string{"env": "prod"})
	prodNew := profile("prod-new", time.Minute, map[string]string{"env": "prod"})
	tieA := profile("a", 3*time.Hour, map[string]string{"tie": "x"})
	tieB := profile("b", 3*time.Hour, map[string]string{"tie": "x"})
	badSel := profile("bad", 5*time.Hour, nil)
	badSel.Spec.ClusterSelector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Bogus"}}
	deleting := profile("deleting", 6*time.Hour, nil)
	deleting.DeletionTimestamp = ptr.To(metav1.Now())

	tests := []struct {
		name     string
		profiles []v1alpha1.IngressProfile
		labels   map[string]string
		want     string
	}{
		{"none", nil, map[string]string{"env": "prod"}, ""},
		{"empty selector selects all", []v1alpha1.IngressProfile{all}, nil, "all"},
		{"oldest matching wins", []v1alpha1.IngressProfile{prodNew, all, prodOld}, map[string]string{"env": "prod"}, "prod-old"},
		{"non-matching ignored", []v1alpha1.IngressProfile{prodNew, prodOld}, map[string]string{"env": "dev"}, ""},
		{"tie broken by name", []v1alpha1.IngressProfile{tieB, tieA}, map[string]string{"tie": "x"}, "a"},
		{"invalid selector and deleting profiles never select", []v1alpha1.IngressProfile{badSel, deleting, prodNew}, map[string]string{"env": "prod"}, "prod-new"},
		{"a profile found invalid takes no cluster", []v1alpha1.IngressProfile{all, prodNew}, map[string]string{"env": "prod", "invalid": "all"}, "prod-new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			invalid := map[string]bool{tt.labels["invalid"]: true}
			got := SelectProfile(tt.profiles, invalid, tt.labels)
			name := ""
			if got != nil {
				name = got.Name
			}
			if name != tt.want {
				t.Fatalf("got %q want %q", name, tt.want)
			}
		})
	}
}

// vipAnnotated is a kubeconfig Secret whose writer names a VIP pool and L2 domain of its own.
func vipAnnotated() Source {
	return FromSecret(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "edge", Labels: map[string]string{"env": "prod"},
		Annotations: map[string]string{v1alpha1.VIPPoolAnnotation: "192.0.2.0/28", v1alpha1.L2DomainAnnotation: "rack-7"}}})
}

// TestSourcePicksNoVIPPoolOrDomain: whoever writes a source may not pick its VIP pool or L2 domain
// (a domain of its own would give it an older cluster's VIP and router ID): annotations are not
// read.
func TestSourcePicksNoVIPPoolOrDomain(t *testing.T) {
	src := vipAnnotated()
	d := DecideLifecycle(LifecycleInput{Source: &src, SourceKnown: true, DefaultZone: "z.test",
		Profiles: []v1alpha1.IngressProfile{profile("p", time.Hour, map[string]string{"env": "prod"})}})
	if d.Action != LifecycleApply || d.Spec.VIP.L2Domain != "" || len(d.Spec.VIP.Pool) != 0 {
		t.Fatalf("the source's annotations made the VIP settings: %+v (%s)", d.Spec.VIP, d.Why)
	}
}

// TestProfileGivesVIPSettings: the profile's L2 domain, pool and router IDs are the cluster's;
// the annotations the source still carries are named (so their users learn why), not read.
func TestProfileGivesVIPSettings(t *testing.T) {
	src := vipAnnotated()
	if !slices.Equal(src.IgnoredVIPAnnotations, []string{v1alpha1.VIPPoolAnnotation, v1alpha1.L2DomainAnnotation}) {
		t.Errorf("ignored annotations %v", src.IgnoredVIPAnnotations)
	}
	p := profile("p", time.Hour, map[string]string{"env": "prod"})
	p.Spec.VIP = v1alpha1.ClusterVIPSettings{Pool: []string{"198.51.100.0/28"}, L2Domain: "hall-1", RouterIDs: &v1alpha1.RouterIDRange{First: 50, Last: 99}}
	d := DecideLifecycle(LifecycleInput{Source: &src, SourceKnown: true, DefaultZone: "z.test", Profiles: []v1alpha1.IngressProfile{p}})
	if d.Spec.VIP.L2Domain != "hall-1" || !slices.Equal(d.Spec.VIP.Pool, []string{"198.51.100.0/28"}) || *d.Spec.VIP.RouterIDs != (v1alpha1.RouterIDRange{First: 50, Last: 99}) {
		t.Fatalf("VIP settings %+v, want the profile's", d.Spec.VIP)
	}
	if d.Spec.VIP.RouterIDs == p.Spec.VIP.RouterIDs {
		t.Error("the spec shares the profile's router ID range")
	}
}
