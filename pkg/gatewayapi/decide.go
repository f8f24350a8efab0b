package gatewayapi

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// Input is what the install decision reads: whether the cluster's profile offers Gateway API, and
// the live state of the set's CRDs (Kinds) in the user cluster.
type Input struct {
	// Enabled: the profile offers Gateway API (spec.gatewayAPI). Disabled, nothing is read or
	// written.
	Enabled bool
	// Forbidden: Shardgate's role may not read the set's CRDs.
	Forbidden bool
	// Live are the set's CRDs present in the cluster, by name; an absent one is not in the map.
	Live map[string]LiveCRD
	// Want is, by name, the applied hash of each CRD as this Shardgate applies it (labelled and
	// stamped like Shardgate's own CRDs).
	Want map[string]string
}

// LiveCRD is what Shardgate reads of one CRD: its metadata only (the CRDs are large, HTTPRoute's
// ~0.4 MB, and read at every engagement) and the versions the API server serves of it (discovery,
// which lists a version once its CRD is established).
type LiveCRD struct {
	metav1.ObjectMeta
	// Hash is the applied hash it carries (render.AppliedHashAnnotation), "" for none.
	Hash string
	// Served are the versions discovery lists it at (among Versions()).
	Served []string
}

// Decision is which CRDs to apply and what the cluster offers once they are established.
type Decision struct {
	// Apply are the names of the CRDs to apply (server-side, Shardgate's field owner, never forced),
	// in Kinds order.
	Apply []string
	// Availability is what the cluster offers once they are applied and established; an install
	// refused on the way is Refused instead.
	Availability Availability
}

// Availability is what a user cluster offers of Gateway API, found at each engagement.
type Availability struct {
	// Served: GatewayClass, Gateway and HTTPRoute are served at v1, so Gateway API routes can be.
	Served bool
	// ListenerSet: ListenerSet is served at v1.
	ListenerSet bool
	// Missing are the kinds of Kinds not served at the version Shardgate and its routers use, in
	// Kinds order (none when Served is false for Disabled, Forbidden or InstallFailed).
	Missing []string
	// BundleVersion and Channel are those of the cluster's CRDs (HTTPRoute's, else the first
	// present), as parsed: vMAJOR.MINOR.PATCH, and standard or experimental; "" when unknown. The
	// annotations are the cluster owner's words, so only what parses is kept.
	BundleVersion, Channel string
	// Ours: the CRDs are Shardgate's (installed or upgraded by it); false: someone else's, used
	// as they are and never written (or none, Disabled or refused).
	Ours bool
	// Reason (a GatewayAPIAvailable reason) and Message say which case holds; "" before the
	// cluster's first contact.
	Reason, Message string
}

// RoutersServe: the cluster serves every kind a router's Gateway provider lists before it serves
// anything (all of Kinds but ListenerSet, which Traefik 3.7 does not read): a Served cluster
// without them (an owner's v1.4.1 set has no TLSRoute at v1) would have routers that never serve.
func (a Availability) RoutersServe() bool {
	return a.Served && !slices.ContainsFunc(a.Missing, func(k string) bool { return k != "ListenerSet" })
}

// Decide decides which of the release's CRDs to apply and what the cluster then offers:
//   - Disabled: nothing read, nothing written, nothing offered.
//   - The set is Shardgate's (every present CRD of it is; see Shardgate): absent CRDs are
//     installed, Shardgate's of an older bundle (or another content of the same bundle) upgraded,
//     and Shardgate's of a newer bundle (written by a newer Shardgate before a rollback) kept:
//     never downgraded.
//   - Any present CRD of the set is someone else's: the whole set is theirs. Shardgate writes none
//     of it, not even the absent ones (a ListenerSet of this release beside an owner's v1.4
//     Gateways would be a mixed install whose next upgrade by the owner would meet Shardgate's
//     fields), and uses what is served as it is, whatever its version or channel.
//
// What is offered is decided by the versions served, not by version strings: routes need
// GatewayClass, Gateway and HTTPRoute at v1 (TooOld otherwise), ListenerSets their v1
// (ListenerSetUnavailable otherwise, still True: routes are served without them).
func Decide(in Input) Decision {
	if !in.Enabled {
		return Decision{Availability: Availability{Reason: v1alpha1.ReasonGatewayAPIDisabled,
			Message: "the profile turns Gateway API off (spec.gatewayAPI: Disabled): nothing of it is installed or used " +
				"in this cluster; CRDs already there stay"}}
	}
	if in.Forbidden {
		return Decision{Availability: Refused(v1alpha1.ReasonGatewayAPIForbidden, "reading their CRDs: HTTP 403")}
	}
	var foreign []string
	for _, k := range Kinds {
		if l, ok := in.Live[k.CRD]; ok && !Shardgate(l.ObjectMeta) {
			foreign = append(foreign, k.CRD)
		}
	}
	var apply []string
	if len(foreign) == 0 {
		for _, k := range Kinds {
			if l, ok := in.Live[k.CRD]; !ok || outdated(l, in.Want[k.CRD]) {
				apply = append(apply, k.CRD)
			}
		}
	}
	a := Availability{Ours: len(foreign) == 0, Served: true, ListenerSet: true}
	var deleting []string
	for _, k := range Kinds {
		l, present := in.Live[k.CRD]
		if slices.Contains(apply, k.CRD) || present && l.DeletionTimestamp == nil && slices.Contains(l.Served, k.Version) {
			continue
		}
		if present && l.DeletionTimestamp != nil {
			deleting = append(deleting, k.Kind)
		}
		a.Missing = append(a.Missing, k.Kind)
		a.Served = a.Served && !slices.Contains(routeKinds, k.Kind)
		a.ListenerSet = a.ListenerSet && k.Kind != "ListenerSet"
	}
	a.BundleVersion, a.Channel = bundleOf(in.Live, apply)
	a.Reason, a.Message = explain(a, deleting)
	return Decision{Apply: apply, Availability: a}
}

// Shardgate says whether a CRD is Shardgate's: labelled as its own and written by Shardgate's
// server-side applies alone (its managed fields name no other writer of its spec or metadata;
// the API server's status writes aside). A CRD someone else created, or edited after Shardgate
// installed it (kubectl apply of another release or channel keeps Shardgate's label), is theirs.
func Shardgate(m metav1.ObjectMeta) bool {
	if m.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
		return false
	}
	applied := false
	for _, f := range m.ManagedFields {
		switch {
		case f.Subresource == "status":
		case f.Manager == v1alpha1.FieldOwner && f.Operation == metav1.ManagedFieldsOperationApply:
			applied = true
		default:
			return false
		}
	}
	return applied
}

// outdated says whether Shardgate's CRD l is to be applied: of an older bundle than the pinned
// one, or of the pinned one with another content than want (what this Shardgate stamps). A newer
// bundle is never downgraded; a CRD being deleted is left to go.
func outdated(l LiveCRD, want string) bool {
	if l.DeletionTimestamp != nil {
		return false
	}
	pinned := version.MustParseSemantic(BundleVersion)
	if v, err := version.ParseSemantic(l.Annotations[BundleVersionAnnotation]); err == nil && !v.EqualTo(pinned) {
		return v.LessThan(pinned)
	}
	return l.Hash != want
}

// Refused is the Availability of a cluster where Shardgate could not read or install the CRDs
// (reason Forbidden or InstallFailed); what says what was refused, in fixed words. Nothing of
// Gateway API is used there: a set Shardgate may not finish is one it cannot answer for.
func Refused(reason, what string) Availability {
	msg := "the API server refused Shardgate's install of Gateway API's CRDs (" + what + "): no Gateway API is used " +
		"in this cluster until it is engaged again"
	if reason == v1alpha1.ReasonGatewayAPIForbidden {
		msg = "Shardgate may not read or install Gateway API's CRDs (" + what + "): its user-cluster role " +
			"(config/user-cluster/rbac.yaml) lacks the rule for them, or an admission policy refused the write; " +
			"no Gateway API is used in this cluster"
	}
	return Availability{Reason: reason, Message: msg}
}

// bundleOf is the bundle version and channel the cluster's CRDs have once apply is applied:
// HTTPRoute's, else the first present CRD's, parsed.
func bundleOf(live map[string]LiveCRD, apply []string) (string, string) {
	names := append([]string{"httproutes." + Group}, CRDNames()...)
	for _, n := range names {
		if slices.Contains(apply, n) {
			return BundleVersion, "standard"
		}
		if l, ok := live[n]; ok {
			return parsedVersion(l.Annotations[BundleVersionAnnotation]), parsedChannel(l.Annotations[ChannelAnnotation])
		}
	}
	return "", ""
}

// parsedVersion is a bundle-version annotation as vMAJOR.MINOR.PATCH (a pre-release kept to 16
// characters of semver's alphabet), "" when it does not parse.
func parsedVersion(s string) string {
	v, err := version.ParseSemantic(s)
	if err != nil {
		return ""
	}
	out := fmt.Sprintf("v%d.%d.%d", v.Major(), v.Minor(), v.Patch())
	if pre := v.PreRelease(); pre != "" {
		out += "-" + pre[:min(len(pre), 16)]
	}
	return out
}

func parsedChannel(s string) string {
	if s == "standard" || s == "experimental" {
		return s
	}
	return ""
}

// explain gives the reason and message of a; deleting are the kinds whose CRD is being deleted.
func explain(a Availability, deleting []string) (string, string) {
	bundle := "bundle " + or(a.BundleVersion, "unknown")
	if a.Channel != "" {
		bundle += ", " + a.Channel + " channel"
	}
	var whose string
	v, err := version.ParseSemantic(a.BundleVersion)
	switch {
	case !a.Ours:
		whose = "Gateway API's CRDs were installed by someone else (" + bundle + "): Shardgate uses them as they are " +
			"and never writes them"
	case err == nil && v.GreaterThan(version.MustParseSemantic(BundleVersion)):
		whose = "Gateway API's CRDs are Shardgate's (" + bundle + ", newer than this Shardgate's " + BundleVersion +
			": kept, never downgraded)"
	default:
		whose = "Shardgate installed Gateway API's standard CRDs (" + bundle + ") and keeps them up to date"
	}
	if len(deleting) > 0 {
		whose += "; being deleted: " + strings.Join(deleting, ", ")
	}
	var routes []string
	for _, k := range routeKinds {
		if slices.Contains(a.Missing, k) {
			routes = append(routes, k)
		}
	}
	var others []string
	for _, k := range a.Missing {
		if !slices.Contains(routes, k) && k != "ListenerSet" {
			others = append(others, k)
		}
	}
	also := ""
	if len(others) > 0 {
		also = "; not served either: " + strings.Join(others, ", ") + " (the routers' Gateway API provider waits for them)"
	}
	switch {
	case !a.Served && a.Ours:
		return v1alpha1.ReasonGatewayAPINotServed, whose + "; " + strings.Join(routes, ", ") + " not served: no Gateway API " +
			"route is served in this cluster until it is engaged again" + also
	case !a.Served:
		return v1alpha1.ReasonGatewayAPITooOld, whose + "; " + strings.Join(routes, ", ") + " not served at v1 (Gateway API " +
			"v1.0 and later): no Gateway API route is served in this cluster" + also
	case !a.ListenerSet:
		return v1alpha1.ReasonListenerSetUnavailable, whose + "; ListenerSet is not served at v1 (standard from Gateway API " +
			"v1.5): Gateway API routes are served, ListenerSets are not" + also
	}
	served := "; GatewayClass, Gateway, HTTPRoute and ListenerSet are served at v1"
	if a.Ours {
		return v1alpha1.ReasonGatewayAPIInstalled, whose + served + also
	}
	return v1alpha1.ReasonGatewayAPIPresent, whose + served + also
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
