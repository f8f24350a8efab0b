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
		if got := Ours(tt.ing, ClasslessAreOurs(tt.classes, tt.policy)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
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
		if got := DecideDefaultClass(tt.classes, tt.policy); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
