// Package ingressclass decides which Ingresses are Shardgate's and of which of its classes (one
// per router flavour), and whether a Shardgate class becomes a user cluster's default: pure
// functions. Callers pass Shardgate's class names (render.IngressClassNames) and the class it may
// make the default (render.DefaultIngressClass).
package ingressclass

import (
	"slices"

	networkingv1 "k8s.io/api/networking/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// DefaultClassAnnotation marks the cluster's default IngressClass.
const DefaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"

// LegacyClassAnnotation is the ingress class annotation from before spec.ingressClassName; many
// controllers still honour it, so an Ingress that names another class through it is theirs.
const LegacyClassAnnotation = "kubernetes.io/ingress.class"

// DefaultClassMarker records on a Shardgate IngressClass that Shardgate made it the default.
// Once it is there, Shardgate never sets the default annotation again: an administrator who
// changes or removes it is never overruled.
const DefaultClassMarker = "shardgate.io/default-class-set"

// isDefaultClass reports whether an IngressClass is marked as the cluster's default.
func isDefaultClass(c *networkingv1.IngressClass) bool {
	return c.Annotations[DefaultClassAnnotation] == "true"
}

// ClasslessClass is the Shardgate class of Ingresses that name no class at all: the cluster's
// default class when it is one of ours; candidate (the class Shardgate would make the default)
// when no class is the default and the profile lets Shardgate be it; "" (not Shardgate's) when
// another controller's class is the default or the profile says Never.
func ClasslessClass(classes []networkingv1.IngressClass, ours []string, candidate string,
	policy v1alpha1.DefaultClassPolicy) string {
	anyDefault := false
	for i := range classes {
		if isDefaultClass(&classes[i]) {
			if slices.Contains(ours, classes[i].Name) {
				return classes[i].Name
			}
			anyDefault = true
		}
	}
	if anyDefault || policy == v1alpha1.DefaultClassNever {
		return ""
	}
	return candidate
}

// ClassOf is the Shardgate class an Ingress belongs to, "" when it is not Shardgate's: the class
// it names by spec.ingressClassName or else by the legacy annotation, when that is one of ours;
// classless (ClasslessClass) when it names none.
func ClassOf(ing *networkingv1.Ingress, ours []string, classless string) string {
	named, ok := "", false
	if ing.Spec.IngressClassName != nil {
		named, ok = *ing.Spec.IngressClassName, true
	} else {
		named, ok = ing.Annotations[LegacyClassAnnotation]
	}
	switch {
	case !ok:
		return classless
	case slices.Contains(ours, named):
		return named
	}
	return ""
}

// DefaultClassAction is what to do about the default-class mark on a Shardgate class.
type DefaultClassAction int

// Default class actions.
const (
	DefaultClassKeep DefaultClassAction = iota
	// DefaultClassMark: mark the class default (and record that Shardgate did).
	DefaultClassMark
	// DefaultClassRelease: give up the mark Shardgate set (the profile says Never now); an
	// administrator's own mark stays.
	DefaultClassRelease
)

// DecideDefaultClass: under IfNoDefault, mark candidate the default once, when it exists and no
// class is default; never again after that (nor another of Shardgate's classes: the marker on any
// of them says Shardgate made its choice once). Under Never, release a mark Shardgate set. It
// returns the action and the class it applies to.
func DecideDefaultClass(classes []networkingv1.IngressClass, ours []string, candidate string,
	policy v1alpha1.DefaultClassPolicy) (DefaultClassAction, string) {
	var mine *networkingv1.IngressClass
	anyDefault, anyMarked := false, false
	for i := range classes {
		c := &classes[i]
		_, marked := c.Annotations[DefaultClassMarker]
		if marked && (c.Name == candidate || slices.Contains(ours, c.Name)) {
			if policy == v1alpha1.DefaultClassNever {
				return DefaultClassRelease, c.Name
			}
			anyMarked = true
		}
		if c.Name == candidate {
			mine = c
		}
		anyDefault = anyDefault || isDefaultClass(c)
	}
	if mine == nil || policy == v1alpha1.DefaultClassNever || anyMarked || anyDefault {
		return DefaultClassKeep, "" // not applied yet (marked on a later pass), or not to be marked
	}
	return DefaultClassMark, mine.Name
}
