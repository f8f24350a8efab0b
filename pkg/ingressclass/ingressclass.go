// Package ingressclass decides which Ingresses are Shardgate's (by class) and whether the
// shardgate IngressClass becomes a user cluster's default: pure functions.
package ingressclass

import (
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

// DefaultClassAnnotation marks the cluster's default IngressClass.
const DefaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"

// LegacyClassAnnotation is the ingress class annotation from before spec.ingressClassName; many
// controllers still honour it, so an Ingress that names another class through it is theirs.
const LegacyClassAnnotation = "kubernetes.io/ingress.class"

// DefaultClassMarker records on the shardgate IngressClass that Shardgate made it the default.
// Once it is there, Shardgate never sets the default annotation again: an administrator who
// changes or removes it is never overruled.
const DefaultClassMarker = "shardgate.io/default-class-set"

// isDefaultClass reports whether an IngressClass is marked as the cluster's default.
func isDefaultClass(c *networkingv1.IngressClass) bool {
	return c.Annotations[DefaultClassAnnotation] == "true"
}

// ClasslessAreOurs reports whether Ingresses that name no class at all are Shardgate's: when the
// shardgate class is the cluster's default, or when no class is and the profile lets Shardgate
// be the default. Another controller's default class keeps them.
func ClasslessAreOurs(classes []networkingv1.IngressClass, policy v1alpha1.DefaultClassPolicy) bool {
	anyDefault := false
	for i := range classes {
		if isDefaultClass(&classes[i]) {
			if classes[i].Name == names.IngressClassName {
				return true
			}
			anyDefault = true
		}
	}
	return !anyDefault && policy != v1alpha1.DefaultClassNever
}

// Ours reports whether Shardgate allocates this Ingress: its class is shardgate, by
// spec.ingressClassName or else by the legacy annotation; or it names no class and classless
// Ingresses are Shardgate's.
func Ours(ing *networkingv1.Ingress, classless bool) bool {
	if ing.Spec.IngressClassName != nil {
		return *ing.Spec.IngressClassName == names.IngressClassName
	}
	if c, ok := ing.Annotations[LegacyClassAnnotation]; ok {
		return c == names.IngressClassName
	}
	return classless
}

// DefaultClassAction is what to do about the default-class mark on the shardgate class.
type DefaultClassAction int

// Default class actions.
const (
	DefaultClassKeep DefaultClassAction = iota
	// DefaultClassMark: mark the shardgate class default (and record that Shardgate did).
	DefaultClassMark
	// DefaultClassRelease: give up the mark Shardgate set (the profile says Never now); an
	// administrator's own mark stays.
	DefaultClassRelease
)

// DecideDefaultClass: under IfNoDefault, mark the shardgate class default once, when it exists
// and no class is default; never again after that. Under Never, release a mark Shardgate set.
func DecideDefaultClass(classes []networkingv1.IngressClass, policy v1alpha1.DefaultClassPolicy) DefaultClassAction {
	var ours *networkingv1.IngressClass
	anyDefault := false
	for i := range classes {
		c := &classes[i]
		if c.Name == names.IngressClassName {
			ours = c
		}
		anyDefault = anyDefault || isDefaultClass(c)
	}
	if ours == nil {
		return DefaultClassKeep // applied first, marked on a later pass
	}
	_, marked := ours.Annotations[DefaultClassMarker]
	switch {
	case policy == v1alpha1.DefaultClassNever && marked:
		return DefaultClassRelease
	case policy != v1alpha1.DefaultClassNever && !marked && !anyDefault:
		return DefaultClassMark
	}
	return DefaultClassKeep
}
