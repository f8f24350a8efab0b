// Package claims decides IngressClaims: which are admitted under the profile's limits, the shard
// each gets, which Ingresses each binds, and what reclaiming does once they are gone (Decide). It
// is pure; pkg/controller/claims gathers, calls it and applies.
package claims

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/dnsname"
	"github.com/shardgate/shardgate/pkg/names"
)

// Claim is an IngressClaim of the user cluster (tenant input, all of it).
type Claim struct {
	Namespace, Name string
	Generation      int64
	Created         time.Time
	Spec            v1alpha1.IngressClaimSpec
}

// Key is namespace/name.
func (c Claim) Key() string { return c.Namespace + "/" + c.Name }

// Input is what Decide decides from.
type Input struct {
	Claims   []Claim
	Settings v1alpha1.ClaimSettings
	// Records are the seed's records (status.claims) from the last pass.
	Records []v1alpha1.ClaimRecord
	// ProfileShards are the profile's shard names (a claimed shard never takes one).
	ProfileShards []string
	// DefaultFlavour is the flavour of a claim that names none (ClusterIngressSpec.DefaultFlavour).
	DefaultFlavour v1alpha1.Flavour
	// WhyUnclaimable says why a new claim may not have a flavour ("": it may): the cluster lacks
	// what its routers need. nil: any may.
	WhyUnclaimable func(v1alpha1.Flavour) string
	// WhyNoHTTPRoutes and WhyNoGRPCRoutes say why a flavour's claimed routers would serve no route
	// of the kind ("": they would): the cluster serves no Gateway API or not the kind, or the
	// flavour's routers serve none. nil: they do.
	WhyNoHTTPRoutes, WhyNoGRPCRoutes func(v1alpha1.Flavour) string
	// Unreadable are the Gateway API kinds ("HTTPRoute", "GRPCRoute") the cluster does not serve
	// to Shardgate now, though nobody turned them off on purpose (a role without the kind, a CRD
	// gone): an admitted claim keeps what it bound of them meanwhile.
	Unreadable map[string]bool
	// ClusterDomain is <clusterid>.<zone> ("" while not accepted yet).
	ClusterDomain string
	// Ingresses, HTTPRoutes and GRPCRoutes are the cluster's routes of each kind a claim may name,
	// namespace/name (of a Gateway API kind only where the cluster serves it).
	Ingresses, HTTPRoutes, GRPCRoutes map[string]bool
	// Ready are the claimed shards' ready routers.
	Ready map[string]int32
	// HeldHosts are the hosts allocated Ingresses hold, with the namespace holding each.
	HeldHosts map[string]string
	// Now and Grace: a claim is reclaimed only once every Ingress it bound has been gone for Grace.
	Now   time.Time
	Grace time.Duration
}

// Output is the new records, and the claims to delete (reclaim policy Delete).
type Output struct {
	Records []v1alpha1.ClaimRecord
	Delete  []string // namespace/name
	// RequeueAfter is when the first running reclaim grace ends (0: none runs).
	RequeueAfter time.Duration
}

// Decide admits claims oldest first: a claim already admitted stays admitted (turning claims off
// or lowering limits refuses only new claims; an edit over the limits or with resources the API
// server would refuse keeps the admitted replicas and resources, EditRefused); a new one needs
// claims allowed, its replicas and resources within the profile's maxima and valid for a
// container, a flavour that is the default or one claims.flavours allows, and its namespace
// under maxPerNamespace. Its router's limits default to maxResources; its flavour is fixed once
// admitted (the Ingresses it binds name that flavour's class: an edit asking for another is
// refused, EditRefused). Each admitted claim keeps its shard (named <claim>-<namespace> when that is a
// free shard name, else claim-<hash>); a new shard whose domain would take a host another
// namespace holds is refused (held hosts win), and a shard whose name a profile shard has since
// taken is provisioned again under another name (the profile's shard wins). A claim binds the
// routes it names (Ingresses, HTTPRoutes, GRPCRoutes) that exist and no older claim binds. Once every route
// it bound has been gone for the grace (a `kubectl replace --force` comes back within it), its reclaim policy
// applies: Retain releases it (routers stay, nothing binds until the claim's next edit), Recycle
// keeps it bound, Delete removes its record (so its shard and names go) and the claim.
func Decide(in Input) Output {
	s := v1alpha1.ResolveClaims(in.Settings)
	claims := slices.Clone(in.Claims)
	slices.SortFunc(claims, func(a, b Claim) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.Key(), b.Key()))
	})
	old := map[string]v1alpha1.ClaimRecord{}
	taken := map[string]bool{}
	profile := map[string]bool{}
	for _, n := range in.ProfileShards {
		taken[n], profile[n] = true, true
	}
	for _, r := range in.Records {
		old[r.Namespace+"/"+r.Name] = r
		if r.Shard != "" {
			taken[r.Shard] = true
		}
	}
	perNamespace := map[string]int32{}
	boundBy := map[string]map[string]string{"Ingress": {}, "HTTPRoute": {}, "GRPCRoute": {}} // kind → route → claim
	var out Output
	for _, c := range claims {
		prev, had := old[c.Key()]
		rec := v1alpha1.ClaimRecord{Namespace: c.Namespace, Name: c.Name, Shard: prev.Shard, Replicas: prev.Replicas,
			Resources: prev.Resources, EverBound: prev.EverBound, ReleasedGeneration: prev.ReleasedGeneration,
			IngressesGoneSince: prev.IngressesGoneSince, Flavour: prev.Flavour, Image: prev.Image}
		admitted := had && prev.Shard != ""
		lostName := ""
		// The profile's shard wins its name, as does the Gateway canary's label (reserved after a
		// claim may have taken it): the claim starts over as a new one.
		if admitted && (profile[prev.Shard] || prev.Shard == names.CanaryGatewayLabel) {
			lostName, admitted = prev.Shard, false
			rec = v1alpha1.ClaimRecord{Namespace: c.Namespace, Name: c.Name}
		}
		problem := overLimits(c, s, perNamespace[c.Namespace])
		invalid := invalidResources(c.Spec.Resources, s.MaxResources)
		flavour := cmp.Or(c.Spec.Flavour, in.DefaultFlavour)
		// The routers it runs: an admitted claim's flavour, whatever an edit asks for.
		runs := flavour
		if admitted {
			runs = cmp.Or(rec.Flavour, in.DefaultFlavour)
		}
		noHTTP := gatewayWhy(in.WhyNoHTTPRoutes, runs, in.DefaultFlavour)
		noGRPC := gatewayWhy(in.WhyNoGRPCRoutes, runs, in.DefaultFlavour)
		// Why none of the routes it names would be served, when none would: the claim would hold
		// routers that serve nothing.
		noRoutes := servesNone(c.Spec, noHTTP, noGRPC)
		switch {
		case !admitted && !s.Allowed:
			out.Records = append(out.Records, failed(rec, v1alpha1.ReasonClaimsNotAllowed, "the cluster's IngressProfile does not allow IngressClaims"))
			continue
		case !admitted && problem != "":
			out.Records = append(out.Records, failed(rec, v1alpha1.ReasonClaimOverLimits, problem))
			continue
		case !admitted && invalid != "":
			out.Records = append(out.Records, failed(rec, v1alpha1.ReasonClaimInvalidResources, invalid))
			continue
		case !admitted && flavour != in.DefaultFlavour && !allowed(s, flavour):
			out.Records = append(out.Records, failed(rec, v1alpha1.ReasonClaimFlavourNotAllowed, notAllowed(flavour, in.DefaultFlavour, s)))
			continue
		case !admitted && why(in.WhyUnclaimable, flavour) != "":
			out.Records = append(out.Records, failed(rec, v1alpha1.ReasonClaimFlavourUnavailable, fmt.Sprintf(
				"its %s routers cannot run here: %s", shown(flavour), why(in.WhyUnclaimable, flavour))))
			continue
		case !admitted && noRoutes != "":
			out.Records = append(out.Records, failed(rec, v1alpha1.ReasonClaimRoutesNotServed, fmt.Sprintf(
				"it names Gateway API routes only, and its %s routers would serve none: %s", shown(flavour), noRoutes)))
			continue
		case !admitted:
			// Recorded only when asked for: a claim that names none follows the cluster's default.
			rec.Flavour = c.Spec.Flavour
			rec.Shard = shardName(c, taken)
			if reason, msg := refuseShard(rec.Shard, c.Namespace, in); reason != "" {
				out.Records = append(out.Records, failed(rec, reason, msg))
				continue
			}
			taken[rec.Shard] = true
		}
		if problem == "" && invalid == "" {
			rec.Replicas, rec.Resources = max(c.Spec.Replicas, 1), AdmittedResources(c.Spec.Resources, s.MaxResources)
		}
		if image, ok := s.Allows(rec.Flavour); ok && rec.Flavour != "" && rec.Flavour != in.DefaultFlavour {
			rec.Image = image // the entry's, kept should it go
		}
		perNamespace[c.Namespace]++
		// An edit of a released claim binds it again.
		if rec.ReleasedGeneration != 0 && c.Generation > rec.ReleasedGeneration {
			rec.ReleasedGeneration, rec.EverBound = 0, false
		}
		released := rec.ReleasedGeneration != 0
		if !released {
			rec.Ingresses = bind(c, c.Spec.Ingresses, in.Ingresses, boundBy["Ingress"])
			keeps := admitted && runs == in.DefaultFlavour
			rec.HTTPRoutes = bindGateway(c, c.Spec.HTTPRoutes, in.HTTPRoutes, boundBy["HTTPRoute"], noHTTP,
				keep(keeps, in.Unreadable["HTTPRoute"], prev.HTTPRoutes, c.Spec.HTTPRoutes))
			rec.GRPCRoutes = bindGateway(c, c.Spec.GRPCRoutes, in.GRPCRoutes, boundBy["GRPCRoute"], noGRPC,
				keep(keeps, in.Unreadable["GRPCRoute"], prev.GRPCRoutes, c.Spec.GRPCRoutes))
		}
		bound := rec.Bound()
		graceNote := ""
		switch {
		case bound > 0:
			rec.EverBound, rec.IngressesGoneSince = true, nil
		case rec.EverBound && !released && c.Spec.ReclaimPolicy != v1alpha1.ReclaimRecycle:
			// Every route it bound is gone: reclaim once they have stayed gone for the grace.
			if rec.IngressesGoneSince == nil {
				rec.IngressesGoneSince = &metav1.Time{Time: in.Now}
			}
			if left := rec.IngressesGoneSince.Add(in.Grace).Sub(in.Now); left > 0 {
				out.RequeueAfter = soonest(out.RequeueAfter, left)
				graceNote = fmt.Sprintf("; every route it named is gone: reclaimed (%s) in %s unless one comes back",
					cmp.Or(c.Spec.ReclaimPolicy, v1alpha1.ReclaimRetain), left.Round(time.Second))
				break
			}
			rec.IngressesGoneSince = nil
			if c.Spec.ReclaimPolicy == v1alpha1.ReclaimDelete {
				out.Delete = append(out.Delete, c.Key())
				continue
			}
			rec.ReleasedGeneration, released = max(c.Generation, 1), true
		default:
			rec.IngressesGoneSince = nil
		}
		ready := in.Ready[rec.Shard]
		switch {
		case released:
			rec.Phase, rec.Reason, rec.Message = v1alpha1.ClaimReleased, v1alpha1.ReasonClaimReleased,
				"every route it named is gone (reclaimPolicy Retain): its routers stay, nothing binds until the claim is edited"
		case ready == 0:
			rec.Phase, rec.Reason, rec.Message = v1alpha1.ClaimPending, v1alpha1.ReasonClaimProvisioning, fmt.Sprintf("shard %s has no ready router yet", rec.Shard)
		default:
			rec.Phase, rec.Reason, rec.Message = v1alpha1.ClaimBound, v1alpha1.ReasonClaimBound,
				fmt.Sprintf("shard %s: %d ready routers serving %s", rec.Shard, ready, servingText(rec))
		}
		rec.Message += graceNote
		kept := func(kind string, bound []string) bool { return admitted && in.Unreadable[kind] && len(bound) > 0 }
		rec.Message += unboundNote([]gatewayNote{
			{"HTTPRoutes", len(c.Spec.HTTPRoutes) > 0, noHTTP, kept("HTTPRoute", rec.HTTPRoutes)},
			{"GRPCRoutes", len(c.Spec.GRPCRoutes) > 0, noGRPC, kept("GRPCRoute", rec.GRPCRoutes)}})
		if edit := strings.Join(slices.DeleteFunc([]string{problem, invalid}, func(p string) bool { return p == "" }), "; "); edit != "" {
			rec.Reason, rec.Message = v1alpha1.ReasonClaimEditRefused, "the edit is refused ("+edit+"); the admitted replicas and resources stay"
		}
		if admittedFlavour := cmp.Or(rec.Flavour, in.DefaultFlavour); flavour != admittedFlavour {
			// Its Ingresses name the admitted flavour's class: other routers would not serve them.
			msg := fmt.Sprintf("the edit of flavour to %s is refused: a claim's flavour is fixed once admitted; its %s routers "+
				"stay (create another claim for %s routers)", shown(flavour), admittedFlavour, shown(flavour))
			if rec.Reason == v1alpha1.ReasonClaimEditRefused {
				msg = rec.Message + "; " + msg
			}
			rec.Reason, rec.Message = v1alpha1.ReasonClaimEditRefused, msg
		}
		if lostName != "" {
			taker := "the profile's shard " + lostName
			if !profile[lostName] {
				taker = "Shardgate's canary (through the default shard's Gateway)"
			}
			rec.Reason, rec.Message = v1alpha1.ReasonClaimShardNameTaken, fmt.Sprintf(
				"%s took this claim's shard name %s; its routers are provisioned again as shard %s", taker, lostName, rec.Shard)
		}
		out.Records = append(out.Records, rec)
	}
	slices.SortFunc(out.Records, func(a, b v1alpha1.ClaimRecord) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return out
}

// bind binds the routes of one kind claim c names that exist and no older claim binds (boundBy,
// route → claim, which it extends), sorted.
func bind(c Claim, refs []corev1.LocalObjectReference, exist map[string]bool, boundBy map[string]string) []string {
	var out []string
	for _, ref := range refs {
		key := c.Namespace + "/" + ref.Name
		if exist[key] && boundBy[key] == "" && !slices.Contains(out, ref.Name) {
			boundBy[key] = c.Key()
			out = append(out, ref.Name)
		}
	}
	slices.Sort(out)
	return out
}

// servingText says how many routes of each kind a claim binds.
func servingText(rec v1alpha1.ClaimRecord) string {
	text := fmt.Sprintf("%d Ingresses", len(rec.Ingresses))
	if len(rec.HTTPRoutes) > 0 {
		text += fmt.Sprintf(" and %d HTTPRoutes", len(rec.HTTPRoutes))
	}
	if len(rec.GRPCRoutes) > 0 {
		text += fmt.Sprintf(" and %d GRPCRoutes", len(rec.GRPCRoutes))
	}
	return text
}

// bindGateway binds the routes of a Gateway API kind claim c names (bind) where its routers serve
// the kind (why is ""); kept (keep) are bound as they were, whatever why says.
func bindGateway(c Claim, refs []corev1.LocalObjectReference, exist map[string]bool, boundBy map[string]string,
	why string, kept []string) []string {
	switch {
	case kept != nil:
		for _, name := range kept {
			boundBy[c.Namespace+"/"+name] = c.Key()
		}
		return kept
	case why != "":
		return nil
	}
	return bind(c, refs, exist, boundBy)
}

// keep is what an admitted claim (of the flavour Gateway API routes ask for) keeps bound of a
// Gateway API kind the cluster does not serve to Shardgate now (unreadable): what it bound before
// (before) that it still names (refs). Whether those routes still exist is unknown, and counting
// them gone would reclaim the claim (Delete: delete it) on what could not be read. nil: bind as usual.
func keep(admitted, unreadable bool, before []string, refs []corev1.LocalObjectReference) []string {
	if !admitted || !unreadable {
		return nil
	}
	var out []string
	for _, name := range before {
		if slices.ContainsFunc(refs, func(r corev1.LocalObjectReference) bool { return r.Name == name }) {
			out = append(out, name)
		}
	}
	return out
}

// gatewayWhy says why a claim's routers of flavour runs would serve no route of a Gateway API kind
// (f, the kind's Input.WhyNo...): the kind's routes ask for the cluster's default flavour's
// routers (its parent Gateway is one per cluster), so another flavour's claim never serves them.
func gatewayWhy(f func(v1alpha1.Flavour) string, runs, defaultFlavour v1alpha1.Flavour) string {
	if runs != defaultFlavour {
		return fmt.Sprintf("Gateway API routes go to the cluster's default flavour's routers (%s), not %s",
			shown(defaultFlavour), shown(runs))
	}
	return why(f, runs)
}

// gatewayNote is what a claim's message says of one Gateway API kind it names.
type gatewayNote struct {
	kinds string // "HTTPRoutes"
	named bool   // the claim names some
	why   string // why they are not bound ("": they are)
	kept  bool   // the cluster does not serve the kind now: those bound before stay bound
}

// unboundNote says which kinds of route a claim names are not bound (or kept as they were), and
// why, kinds with one reason together: "" when all may be bound.
func unboundNote(notes []gatewayNote) string {
	var b strings.Builder
	for i := 0; i < len(notes); i++ {
		n := notes[i]
		if !n.named || n.why == "" {
			continue
		}
		kinds := n.kinds
		for i+1 < len(notes) && notes[i+1].named && notes[i+1].why == n.why && notes[i+1].kept == n.kept {
			i++
			kinds += " and " + notes[i].kinds
		}
		state := "are not bound"
		if n.kept {
			state = "cannot be read now (those it bound stay bound)"
		}
		fmt.Fprintf(&b, "; its %s %s: %s", kinds, state, n.why)
	}
	return b.String()
}

// servesNone says why none of the routes spec names would be served (each Gateway API kind it
// names is not, for the reason given, and it names no Ingress), "" when some would.
func servesNone(spec v1alpha1.IngressClaimSpec, noHTTP, noGRPC string) string {
	if len(spec.Ingresses) > 0 || len(spec.HTTPRoutes) > 0 && noHTTP == "" || len(spec.GRPCRoutes) > 0 && noGRPC == "" {
		return ""
	}
	var why []string
	if len(spec.HTTPRoutes) > 0 {
		why = append(why, noHTTP)
	}
	if len(spec.GRPCRoutes) > 0 {
		why = append(why, noGRPC)
	}
	return strings.Join(slices.Compact(why), "; ")
}

func allowed(s v1alpha1.ClaimSettings, f v1alpha1.Flavour) bool {
	_, ok := s.Allows(f)
	return ok
}

// notAllowed says which flavours a claim may ask for.
func notAllowed(flavour, defaultFlavour v1alpha1.Flavour, s v1alpha1.ClaimSettings) string {
	allowed := []string{string(defaultFlavour)}
	for _, f := range s.Flavours {
		allowed = append(allowed, string(f.Name))
	}
	slices.Sort(allowed)
	return fmt.Sprintf("the cluster's IngressProfile does not allow claims of flavour %s (claims.flavours): allowed %s",
		shown(flavour), strings.Join(slices.Compact(allowed), ", "))
}

// shown is a flavour a claim asks for as a message may repeat it: the user cluster's owner may
// loosen the CRD that bounds it, so at most 32 characters of a flavour's alphabet.
func shown(f v1alpha1.Flavour) string {
	out := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return -1
	}, string(f))
	if len(out) > 32 {
		out = out[:32] + "…"
	}
	return strconv.Quote(out)
}

// why calls f, when set.
func why(f func(v1alpha1.Flavour) string, flavour v1alpha1.Flavour) string {
	if f == nil {
		return ""
	}
	return f(flavour)
}

// refuseShard says why a new claimed shard cannot be provisioned ("" when it can): its domain's
// names are too long, or it would take a host another namespace holds.
func refuseShard(shard, namespace string, in Input) (reason, msg string) {
	if in.ClusterDomain == "" {
		return "", ""
	}
	domain := names.ShardDomain(shard, in.ClusterDomain)
	if err := dnsname.CheckDomain(domain); err != nil {
		return v1alpha1.ReasonClaimNamesTooLong, fmt.Sprintf("the claimed shard's domain %s: %v; use a shorter claim or namespace name", domain, err)
	}
	var held []string
	for h, ns := range in.HeldHosts {
		if h = strings.ToLower(h); ns != namespace && (h == domain || strings.HasSuffix(h, "."+domain)) {
			held = append(held, h+" (namespace "+ns+")")
		}
	}
	if len(held) == 0 {
		return "", ""
	}
	slices.Sort(held)
	return v1alpha1.ReasonClaimHostsHeld, fmt.Sprintf("the claimed shard's domain %s would take hosts other namespaces hold: %s; "+
		"use another claim name", domain, strings.Join(held[:min(len(held), 3)], ", "))
}

func soonest(a, b time.Duration) time.Duration {
	if a == 0 {
		return b
	}
	return min(a, b)
}

func failed(rec v1alpha1.ClaimRecord, reason, msg string) v1alpha1.ClaimRecord {
	return v1alpha1.ClaimRecord{Namespace: rec.Namespace, Name: rec.Name, Phase: v1alpha1.ClaimFailed, Reason: reason, Message: msg}
}

// overLimits says what of the claim exceeds the profile's limits ("" when nothing does).
func overLimits(c Claim, s v1alpha1.ClaimSettings, inNamespace int32) string {
	var p []string
	if c.Spec.Replicas > s.MaxReplicas {
		p = append(p, fmt.Sprintf("replicas %d > maxReplicas %d", c.Spec.Replicas, s.MaxReplicas))
	}
	for _, list := range []corev1.ResourceList{c.Spec.Resources.Requests, c.Spec.Resources.Limits} {
		for name, q := range list {
			limit, ok := s.MaxResources[name]
			if !ok && len(s.MaxResources) > 0 || ok && q.Cmp(limit) > 0 {
				p = append(p, fmt.Sprintf("%s %s exceeds maxResources (%s)", name, q.String(), limitText(s.MaxResources, name)))
			}
		}
	}
	if inNamespace >= s.MaxPerNamespace {
		p = append(p, fmt.Sprintf("namespace %s already has %d claims (maxPerNamespace %d)", c.Namespace, inNamespace, s.MaxPerNamespace))
	}
	slices.Sort(p)
	return strings.Join(slices.Compact(p), "; ")
}

func limitText(l corev1.ResourceList, name corev1.ResourceName) string {
	if q, ok := l[name]; ok {
		return q.String()
	}
	return "not allowed"
}

// shardName is <claim>-<namespace> when that is a valid, free shard name, else claim-<hash>.
func shardName(c Claim, taken map[string]bool) string {
	n := c.Name + "-" + c.Namespace
	// The canary's label is reserved: a shard named so would make its domain the default shard's
	// canary host (a claim "shardgate" in namespace "canary").
	if len(n) <= 40 && len(validation.IsDNS1123Label(n)) == 0 && !taken[n] && n != v1alpha1.DefaultShardName &&
		n != names.CanaryLabel && n != names.CanaryGatewayLabel {
		return n
	}
	for i := 0; ; i++ {
		n = fmt.Sprintf("claim-%x", sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", c.Namespace, c.Name, i)))[:16]
		if !taken[n] {
			return n
		}
	}
}
