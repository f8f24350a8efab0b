package gatewayapi

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shardgate/shardgate/api/v1alpha1"
)

// crd builds a live CRD of the set for the decision's tests.
type crd struct {
	bundle, channel string
	ours            bool
	hash            string
	served          []string
	edit            func(*LiveCRD)
}

const wantHash = "want"

func (c crd) live(name string) LiveCRD {
	l := LiveCRD{ObjectMeta: metav1.ObjectMeta{Name: name,
		Annotations: map[string]string{BundleVersionAnnotation: c.bundle, ChannelAnnotation: c.channel}},
		Hash: c.hash, Served: c.served}
	// The API server's own status writes are on every CRD, whoever owns it.
	status := metav1.ManagedFieldsEntry{Manager: "kube-apiserver", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}
	if c.ours {
		l.Labels = map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue}
		l.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: v1alpha1.FieldOwner, Operation: metav1.ManagedFieldsOperationApply}, status}
	} else {
		l.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl-client-side-apply", Operation: metav1.ManagedFieldsOperationUpdate}, status}
	}
	if c.edit != nil {
		c.edit(&l)
	}
	return l
}

// every is the whole set, each CRD as c says, served at the version Kinds names (and v1beta1 where
// the release serves it too).
func every(c crd) map[string]LiveCRD {
	out := map[string]LiveCRD{}
	for _, k := range Kinds {
		cc := c
		if cc.served == nil {
			cc.served = []string{k.Version}
		}
		out[k.CRD] = cc.live(k.CRD)
	}
	return out
}

// v141 is Gateway API v1.4.1's standard channel as someone else installed it: no ListenerSet, no
// TLSRoute, ReferenceGrant at v1beta1 only.
func v141() map[string]LiveCRD {
	out := map[string]LiveCRD{}
	for kind, served := range map[string][]string{"GatewayClass": {"v1", "v1beta1"}, "Gateway": {"v1", "v1beta1"},
		"HTTPRoute": {"v1", "v1beta1"}, "GRPCRoute": {"v1"}, "ReferenceGrant": {"v1beta1"}, "BackendTLSPolicy": {"v1"}} {
		name := crdOf(kind)
		out[name] = crd{bundle: "v1.4.1", channel: "standard", served: served}.live(name)
	}
	return out
}

func crdOf(kind string) string {
	for _, k := range Kinds {
		if k.Kind == kind {
			return k.CRD
		}
	}
	panic(kind)
}

func wants() map[string]string {
	out := map[string]string{}
	for _, n := range CRDNames() {
		out[n] = wantHash
	}
	return out
}

func TestDecide(t *testing.T) {
	ours := crd{bundle: BundleVersion, channel: "standard", ours: true, hash: wantHash}
	without := func(live map[string]LiveCRD, kinds ...string) map[string]LiveCRD {
		for _, k := range kinds {
			delete(live, crdOf(k))
		}
		return live
	}
	with := func(live map[string]LiveCRD, kind string, c crd) map[string]LiveCRD {
		live[crdOf(kind)] = c.live(crdOf(kind))
		return live
	}
	now := metav1.Now()
	for name, tc := range map[string]struct {
		in Input
		// apply: the kinds whose CRD is applied.
		apply []string
		want  Availability
		// says: words the message must hold.
		says []string
	}{
		"disabled: nothing read or written, even where nothing is installed": {
			in:   Input{Enabled: false},
			want: Availability{Reason: v1alpha1.ReasonGatewayAPIDisabled},
			says: []string{"spec.gatewayAPI: Disabled"},
		},
		"disabled beside someone else's CRDs: not used": {
			in:   Input{Enabled: false, Live: v141()},
			want: Availability{Reason: v1alpha1.ReasonGatewayAPIDisabled},
		},
		"the role may not read the CRDs": {
			in:   Input{Enabled: true, Forbidden: true},
			want: Availability{Reason: v1alpha1.ReasonGatewayAPIForbidden},
			says: []string{"config/user-cluster/rbac.yaml"},
		},
		"absent: the whole set installed": {
			in:    Input{Enabled: true, Want: wants()},
			apply: []string{"GatewayClass", "Gateway", "HTTPRoute", "ListenerSet", "GRPCRoute", "ReferenceGrant", "BackendTLSPolicy", "TLSRoute"},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: BundleVersion, Channel: "standard", Ours: true,
				Reason: v1alpha1.ReasonGatewayAPIInstalled},
			says: []string{"Shardgate installed", BundleVersion},
		},
		"Shardgate's, up to date: only read": {
			in: Input{Enabled: true, Live: every(ours), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: BundleVersion, Channel: "standard", Ours: true,
				Reason: v1alpha1.ReasonGatewayAPIInstalled},
		},
		"Shardgate's, some absent (a new kind in the set): the absent installed": {
			in:    Input{Enabled: true, Live: without(every(ours), "ListenerSet", "TLSRoute"), Want: wants()},
			apply: []string{"ListenerSet", "TLSRoute"},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: BundleVersion, Channel: "standard", Ours: true,
				Reason: v1alpha1.ReasonGatewayAPIInstalled},
		},
		"Shardgate's of an older bundle: upgraded": {
			in:    Input{Enabled: true, Live: every(crd{bundle: "v1.5.1", channel: "standard", ours: true, hash: "older"}), Want: wants()},
			apply: []string{"GatewayClass", "Gateway", "HTTPRoute", "ListenerSet", "GRPCRoute", "ReferenceGrant", "BackendTLSPolicy", "TLSRoute"},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: BundleVersion, Channel: "standard", Ours: true,
				Reason: v1alpha1.ReasonGatewayAPIInstalled},
		},
		"Shardgate's of the pinned bundle, another content (what Shardgate stamps changed)": {
			in:    Input{Enabled: true, Live: with(every(ours), "Gateway", crd{bundle: BundleVersion, channel: "standard", ours: true, hash: "other"}), Want: wants()},
			apply: []string{"Gateway"},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: BundleVersion, Channel: "standard", Ours: true,
				Reason: v1alpha1.ReasonGatewayAPIInstalled},
		},
		"Shardgate's of a newer bundle (a newer Shardgate, rolled back): never downgraded": {
			in: Input{Enabled: true, Live: every(crd{bundle: "v1.7.0", channel: "standard", ours: true, hash: "newer"}), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: "v1.7.0", Channel: "standard", Ours: true,
				Reason: v1alpha1.ReasonGatewayAPIInstalled},
			says: []string{"newer than this Shardgate's", "never downgraded"},
		},
		"Shardgate's, its HTTPRoute CRD being deleted: left to go, no route served": {
			in: Input{Enabled: true, Live: with(every(ours), "HTTPRoute", crd{bundle: BundleVersion, channel: "standard", ours: true,
				hash: wantHash, served: []string{}, edit: func(l *LiveCRD) { l.DeletionTimestamp = &now }}), Want: wants()},
			want: Availability{ListenerSet: true, Missing: []string{"HTTPRoute"}, BundleVersion: BundleVersion, Channel: "standard",
				Ours: true, Reason: v1alpha1.ReasonGatewayAPINotServed},
			says: []string{"being deleted: HTTPRoute"},
		},
		"Gateway API v1.4.1's standard CRDs, someone else's: kept as they are, routes without ListenerSets": {
			in: Input{Enabled: true, Live: v141(), Want: wants()},
			want: Availability{Served: true, Missing: []string{"ListenerSet", "TLSRoute"}, BundleVersion: "v1.4.1", Channel: "standard",
				Reason: v1alpha1.ReasonListenerSetUnavailable},
			says: []string{"installed by someone else (bundle v1.4.1, standard channel)", "never writes them",
				"ListenerSet is not served at v1", "not served either: TLSRoute"},
		},
		"someone else's newer experimental set: used as it is": {
			in: Input{Enabled: true, Live: every(crd{bundle: "v1.7.0", channel: "experimental"}), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: "v1.7.0", Channel: "experimental",
				Reason: v1alpha1.ReasonGatewayAPIPresent},
		},
		"someone else's set of the pinned bundle, unlabelled: never written": {
			in: Input{Enabled: true, Live: every(crd{bundle: BundleVersion, channel: "standard", hash: wantHash}), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: BundleVersion, Channel: "standard",
				Reason: v1alpha1.ReasonGatewayAPIPresent},
		},
		"too old: someone else's v0.8 HTTPRoute, served at v1beta1 only; nothing installed beside it": {
			in: Input{Enabled: true, Live: map[string]LiveCRD{crdOf("HTTPRoute"): crd{bundle: "v0.8.0", channel: "standard",
				served: []string{"v1beta1"}}.live(crdOf("HTTPRoute"))}, Want: wants()},
			want: Availability{Missing: []string{"GatewayClass", "Gateway", "HTTPRoute", "ListenerSet", "GRPCRoute", "ReferenceGrant",
				"BackendTLSPolicy", "TLSRoute"}, BundleVersion: "v0.8.0", Channel: "standard", Reason: v1alpha1.ReasonGatewayAPITooOld},
			says: []string{"GatewayClass, Gateway, HTTPRoute not served at v1"},
		},
		"Shardgate's set edited by someone else (their apply of another channel keeps the label): theirs now": {
			in: Input{Enabled: true, Live: without(with(every(ours), "HTTPRoute", crd{bundle: "v1.6.3", channel: "experimental", ours: true, served: []string{"v1"},
				edit: func(l *LiveCRD) {
					l.ManagedFields = append(l.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply})
				}}), "TLSRoute"), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, Missing: []string{"TLSRoute"}, BundleVersion: "v1.6.3", Channel: "experimental",
				Reason: v1alpha1.ReasonGatewayAPIPresent},
		},
		"labelled as Shardgate's but written by another manager's apply alone: theirs": {
			in: Input{Enabled: true, Live: every(crd{bundle: "v1.5.0", channel: "standard", ours: true, edit: func(l *LiveCRD) {
				l.ManagedFields[0].Manager = "argocd-controller"
			}}), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: "v1.5.0", Channel: "standard",
				Reason: v1alpha1.ReasonGatewayAPIPresent},
		},
		"labelled as Shardgate's, no managed fields at all: not known to be Shardgate's, theirs": {
			in: Input{Enabled: true, Live: every(crd{bundle: "v1.5.0", channel: "standard", ours: true, edit: func(l *LiveCRD) {
				l.ManagedFields = nil
			}}), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: "v1.5.0", Channel: "standard",
				Reason: v1alpha1.ReasonGatewayAPIPresent},
		},
		"the owner's annotations are their words: only what parses is shown": {
			in:   Input{Enabled: true, Live: every(crd{bundle: "v1.4.1 <a href=x>", channel: "ask me at evil.example"}), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, Reason: v1alpha1.ReasonGatewayAPIPresent},
			says: []string{"bundle unknown)"},
		},
		"an overlong pre-release is cut": {
			in: Input{Enabled: true, Live: every(crd{bundle: "v1.7.0-rc.1.aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", channel: "standard"}), Want: wants()},
			want: Availability{Served: true, ListenerSet: true, BundleVersion: "v1.7.0-rc.1.aaaaaaaaaaa", Channel: "standard",
				Reason: v1alpha1.ReasonGatewayAPIPresent},
		},
	} {
		t.Run(name, func(t *testing.T) {
			d := Decide(tc.in)
			var apply []string
			for _, k := range tc.apply {
				apply = append(apply, crdOf(k))
			}
			if !slices.Equal(d.Apply, apply) {
				t.Errorf("apply %v, want %v", d.Apply, apply)
			}
			got := d.Availability
			msg := got.Message
			got.Message = ""
			if got.Served != tc.want.Served || got.ListenerSet != tc.want.ListenerSet || !slices.Equal(got.Missing, tc.want.Missing) ||
				got.BundleVersion != tc.want.BundleVersion || got.Channel != tc.want.Channel || got.Ours != tc.want.Ours ||
				got.Reason != tc.want.Reason {
				t.Errorf("availability %+v, want %+v", got, tc.want)
			}
			if msg == "" {
				t.Error("no message")
			}
			for _, w := range tc.says {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q does not say %q", msg, w)
				}
			}
			for _, bad := range []string{"<a href", "evil.example"} {
				if strings.Contains(msg, bad) {
					t.Errorf("message %q repeats the cluster's words %q", msg, bad)
				}
			}
		})
	}
}

// TestNeverWritesAForeignSet: whatever else the cluster holds, a set with one CRD that is not
// Shardgate's gets no write at all, and a CRD that is not Shardgate's is never in Apply.
func TestNeverWritesAForeignSet(t *testing.T) {
	for _, k := range Kinds {
		live := every(crd{bundle: "v1.0.0", channel: "standard", ours: true, hash: "old"})
		live[k.CRD] = crd{bundle: "v1.0.0", channel: "standard"}.live(k.CRD)
		if d := Decide(Input{Enabled: true, Live: live, Want: wants()}); len(d.Apply) > 0 || d.Availability.Ours {
			t.Errorf("with %s someone else's: apply %v, ours %v", k.Kind, d.Apply, d.Availability.Ours)
		}
	}
}

func TestRefused(t *testing.T) {
	for _, reason := range []string{v1alpha1.ReasonGatewayAPIForbidden, v1alpha1.ReasonGatewayAPIInstallFailed} {
		a := Refused(reason, "HTTP 422: request refused")
		if a.Served || a.ListenerSet || a.Ours || a.Reason != reason || !strings.Contains(a.Message, "HTTP 422: request refused") {
			t.Errorf("Refused(%s) = %+v", reason, a)
		}
	}
}

// TestRoutersServeNeedsWhatTheProviderLists: an owner's set without TLSRoute at v1 serves
// HTTPRoutes, but the routers' Gateway provider would wait for ever: no Gateways are rendered.
func TestRoutersServeNeedsWhatTheProviderLists(t *testing.T) {
	for _, c := range []struct {
		a    Availability
		want bool
	}{
		{Availability{Served: true}, true},
		{Availability{Served: true, Missing: []string{"ListenerSet"}}, true},
		{Availability{Served: true, Missing: []string{"ListenerSet", "TLSRoute"}}, false},
		{Availability{Served: false}, false},
	} {
		if got := c.a.RoutersServe(); got != c.want {
			t.Errorf("%+v: RoutersServe %v, want %v", c.a, got, c.want)
		}
	}
}
