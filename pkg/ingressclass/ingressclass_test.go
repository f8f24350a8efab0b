package ingressclass

import (
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

func class(name string, annotations map[string]string) networkingv1.IngressClass {
	return networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations}}
}

var (
	isDefault = map[string]string{DefaultClassAnnotation: "true"}
	ours      = class(names.IngressClassName, nil)
	oursDef   = class(names.IngressClassName, map[string]string{DefaultClassAnnotation: "true", DefaultClassMarker: "true"})
	nginxDef  = class("nginx", isDefault)
)

// TestClassOwnership: Ingresses of other controllers are never Shardgate's, by spec or by the
// legacy annotation, and Ingresses naming no class follow the cluster's default class.
func TestClassOwnership(t *testing.T) {
	ing := func(class *string, legacy string) *networkingv1.Ingress {
		i := &networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: class}}
		if legacy != "" {
			i.Annotations = map[string]string{LegacyClassAnnotation: legacy}
		}
		return i
	}
	for _, tt := range []struct {
		name    string
		classes []networkingv1.IngressClass
		policy  v1alpha1.DefaultClassPolicy
		ing     *networkingv1.Ingress
		want    bool
	}{
		{"spec names shardgate", nil, "", ing(ptr.To("shardgate"), ""), true},
		{"spec names another class", []networkingv1.IngressClass{oursDef}, "", ing(ptr.To("nginx"), ""), false},
		{"legacy annotation names another class", []networkingv1.IngressClass{oursDef}, "", ing(nil, "nginx"), false},
		{"legacy annotation names shardgate", []networkingv1.IngressClass{nginxDef}, "", ing(nil, "shardgate"), true},
		{"spec wins over the annotation", nil, "", ing(ptr.To("shardgate"), "nginx"), true},
		{"classless, shardgate is default", []networkingv1.IngressClass{oursDef, class("nginx", nil)}, "", ing(nil, ""), true},
		{"classless, another controller is default", []networkingv1.IngressClass{ours, nginxDef}, v1alpha1.DefaultClassIfNoDefault, ing(nil, ""), false},
		{"classless, no default class", []networkingv1.IngressClass{ours}, v1alpha1.DefaultClassIfNoDefault, ing(nil, ""), true},
		{"classless, no default class, policy Never", []networkingv1.IngressClass{ours}, v1alpha1.DefaultClassNever, ing(nil, ""), false},
	} {
		ours := []string{names.IngressClassName}
		got := ClassOf(tt.ing, ours, ClasslessClass(tt.classes, ours, names.IngressClassName, tt.policy))
		if (got == names.IngressClassName) != tt.want || (got != "" && got != names.IngressClassName) {
			t.Errorf("%s: %q, want ours %v", tt.name, got, tt.want)
		}
	}
	// An empty legacy annotation names a class, none of ours: not Shardgate's even when classless
	// Ingresses are.
	empty := &networkingv1.Ingress{}
	empty.Annotations = map[string]string{LegacyClassAnnotation: ""}
	if got := ClassOf(empty, []string{names.IngressClassName}, names.IngressClassName); got != "" {
		t.Errorf("empty legacy annotation: %q", got)
	}
}

// TestDecideDefaultClass: Shardgate takes the default class only when none exists, once; never
// from another controller, and never back from an administrator who changed it.
func TestDecideDefaultClass(t *testing.T) {
	adminUnmarked := class(names.IngressClassName, map[string]string{DefaultClassMarker: "true", DefaultClassAnnotation: "false"})
	for _, tt := range []struct {
		name    string
		classes []networkingv1.IngressClass
		policy  v1alpha1.DefaultClassPolicy
		want    DefaultClassAction
	}{
		{"no default anywhere: mark", []networkingv1.IngressClass{ours, class("nginx", nil)}, v1alpha1.DefaultClassIfNoDefault, DefaultClassMark},
		{"another controller's default: keep", []networkingv1.IngressClass{ours, nginxDef}, v1alpha1.DefaultClassIfNoDefault, DefaultClassKeep},
		{"already marked: keep", []networkingv1.IngressClass{oursDef}, v1alpha1.DefaultClassIfNoDefault, DefaultClassKeep},
		{"administrator unmarked it: keep", []networkingv1.IngressClass{adminUnmarked}, v1alpha1.DefaultClassIfNoDefault, DefaultClassKeep},
		{"class not applied yet: keep", nil, v1alpha1.DefaultClassIfNoDefault, DefaultClassKeep},
		{"policy Never, never marked: keep", []networkingv1.IngressClass{ours}, v1alpha1.DefaultClassNever, DefaultClassKeep},
		{"policy Never after a mark: release", []networkingv1.IngressClass{oursDef}, v1alpha1.DefaultClassNever, DefaultClassRelease},
	} {
		got, class := DecideDefaultClass(tt.classes, []string{names.IngressClassName}, names.IngressClassName, tt.policy)
		if got != tt.want || (got != DefaultClassKeep) != (class == names.IngressClassName) {
			t.Errorf("%s: %d on %q, want %d", tt.name, got, class, tt.want)
		}
	}
}

// TestClassesOfSeveralFlavours: each flavour has its class; an Ingress belongs to the one it
// names, classless ones to the default class when it is one of Shardgate's, and the default mark
// is taken once, for the candidate, and released from whichever class carries it.
func TestClassesOfSeveralFlavours(t *testing.T) {
	classes := []string{"shardgate", "shardgate-fake"}
	fake := class("shardgate-fake", nil)
	fakeDef := class("shardgate-fake", map[string]string{DefaultClassAnnotation: "true", DefaultClassMarker: "true"})
	named := func(c string) *networkingv1.Ingress {
		return &networkingv1.Ingress{Spec: networkingv1.IngressSpec{IngressClassName: ptr.To(c)}}
	}
	classless := &networkingv1.Ingress{}
	for _, tt := range []struct {
		name      string
		classes   []networkingv1.IngressClass
		candidate string
		ing       *networkingv1.Ingress
		want      string
	}{
		{"names the second flavour's class", []networkingv1.IngressClass{oursDef, fake}, "shardgate", named("shardgate-fake"), "shardgate-fake"},
		{"names the first's", []networkingv1.IngressClass{ours, fakeDef}, "shardgate", named("shardgate"), "shardgate"},
		{"classless, the second's class is default", []networkingv1.IngressClass{ours, fakeDef}, "shardgate", classless, "shardgate-fake"},
		{"classless, no default: the candidate", []networkingv1.IngressClass{ours, fake}, "shardgate-fake", classless, "shardgate-fake"},
		{"classless, nginx is default", []networkingv1.IngressClass{ours, fake, nginxDef}, "shardgate", classless, ""},
		{"names nginx", []networkingv1.IngressClass{oursDef, fake}, "shardgate", named("nginx"), ""},
	} {
		got := ClassOf(tt.ing, classes, ClasslessClass(tt.classes, classes, tt.candidate, v1alpha1.DefaultClassIfNoDefault))
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	adminUnmarkedFake := class("shardgate-fake",
		map[string]string{DefaultClassMarker: "true", DefaultClassAnnotation: "false"})
	for _, tt := range []struct {
		name      string
		classes   []networkingv1.IngressClass
		candidate string
		policy    v1alpha1.DefaultClassPolicy
		want      DefaultClassAction
		on        string
	}{
		{"no default: mark the candidate", []networkingv1.IngressClass{ours, fake}, "shardgate-fake", v1alpha1.DefaultClassIfNoDefault,
			DefaultClassMark, "shardgate-fake"},
		{"another of ours is default: keep", []networkingv1.IngressClass{oursDef, fake}, "shardgate-fake", v1alpha1.DefaultClassIfNoDefault,
			DefaultClassKeep, ""},
		{"Shardgate marked another of its classes once: never again", []networkingv1.IngressClass{ours, adminUnmarkedFake}, "shardgate",
			v1alpha1.DefaultClassIfNoDefault, DefaultClassKeep, ""},
		{"Never: release the mark where it is", []networkingv1.IngressClass{ours, fakeDef}, "shardgate", v1alpha1.DefaultClassNever,
			DefaultClassRelease, "shardgate-fake"},
	} {
		got, on := DecideDefaultClass(tt.classes, classes, tt.candidate, tt.policy)
		if got != tt.want || on != tt.on {
			t.Errorf("%s: %d on %q, want %d on %q", tt.name, got, on, tt.want, tt.on)
		}
	}
}
