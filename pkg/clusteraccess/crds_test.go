package clusteraccess

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/render"
	"github.com/shardgate/shardgate/test/framework"
)

// TestEstablishedFromTheApplyAnswer: an apply's answer that says Established spares the
// engagement its GETs of the CRD; anything else (no status, False, a malformed status) waits.
func TestEstablishedFromTheApplyAnswer(t *testing.T) {
	cond := func(typ, status string) map[string]any { return map[string]any{"type": typ, "status": status} }
	for name, tc := range map[string]struct {
		status any
		want   bool
	}{
		"established":          {map[string]any{"conditions": []any{cond("NamesAccepted", "True"), cond("Established", "True")}}, true},
		"not yet":              {map[string]any{"conditions": []any{cond("NamesAccepted", "True"), cond("Established", "False")}}, false},
		"no status":            {nil, false},
		"conditions malformed": {map[string]any{"conditions": "Established"}, false},
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
				"metadata": map[string]any{"name": "routedips.shardgate.io"}}}
			if tc.status != nil {
				u.Object["status"] = tc.status
			}
			if got := established(u); got != tc.want {
				t.Fatalf("established = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCRDUpToDate: a CRD is left alone only when Shardgate applied exactly this content, no one
// else wrote it since (its status aside), it is established and not going away.
func TestCRDUpToDate(t *testing.T) {
	const hash = "abc"
	ours := metav1.ManagedFieldsEntry{Manager: v1alpha1.FieldOwner, Operation: metav1.ManagedFieldsOperationApply}
	status := metav1.ManagedFieldsEntry{Manager: "kube-apiserver", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status"}
	established := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}
	crd := func(edit func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
		c := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "routedips.shardgate.io",
			Annotations:   map[string]string{render.AppliedHashAnnotation: hash},
			ManagedFields: []metav1.ManagedFieldsEntry{ours, status}},
			Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{established}}}
		if edit != nil {
			edit(c)
		}
		return c
	}
	now := metav1.Now()
	for name, tc := range map[string]struct {
		live *apiextensionsv1.CustomResourceDefinition
		want bool
	}{
		"applied by Shardgate, established": {crd(nil), true},
		"another content (an older Shardgate)": {crd(func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Annotations[render.AppliedHashAnnotation] = "older"
		}), false},
		"no hash (applied before hashes, or by hand)": {crd(func(c *apiextensionsv1.CustomResourceDefinition) { c.Annotations = nil }), false},
		"edited by someone else": {crd(func(c *apiextensionsv1.CustomResourceDefinition) {
			c.ManagedFields = append(c.ManagedFields, metav1.ManagedFieldsEntry{Manager: "kubectl-edit", Operation: metav1.ManagedFieldsOperationUpdate})
		}), false},
		"updated, not applied, under Shardgate's name": {crd(func(c *apiextensionsv1.CustomResourceDefinition) {
			c.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: v1alpha1.FieldOwner, Operation: metav1.ManagedFieldsOperationUpdate}, status}
		}), false},
		"not established": {crd(func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse}}
		}), false},
		"being deleted": {crd(func(c *apiextensionsv1.CustomResourceDefinition) { c.DeletionTimestamp = &now }), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := crdUpToDate(tc.live, hash); got != tc.want {
				t.Fatalf("crdUpToDate = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestCRDsAppliedOnlyWhenNeeded engages a real API server three times and counts, in its audit
// log, the writes of Shardgate's CRDs: the first engagement applies them, the second only reads
// them, and after someone else edits one, the third applies that one again and undoes the edit.
func TestCRDsAppliedOnlyWhenNeeded(t *testing.T) {
	dir := framework.TestDir(t)
	policy, auditLog := filepath.Join(dir, "audit-policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(`apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  resources:
  - group: apiextensions.k8s.io
    resources: ["customresourcedefinitions"]
- level: None
`), 0o644); err != nil {
		t.Fatal(err)
	}
	cp := userAPIServerWithFlags(t, map[string]string{"audit-policy-file": policy, "audit-log-path": auditLog, "audit-log-format": "json"})
	kc, err := framework.KubeconfigFromConfig(cp.Config, "user")
	if err != nil {
		t.Fatal(err)
	}
	engage := func() {
		t.Helper()
		e, _ := engageObservable(t, kc)
		e.Stop()
	}
	// writes counts Shardgate's successful CRD writes in the audit log, by CRD name.
	writes := func() map[string]int {
		t.Helper()
		raw, err := os.ReadFile(auditLog)
		if err != nil {
			t.Fatal(err)
		}
		n := map[string]int{}
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var e struct {
				Verb, RequestURI string
				ObjectRef        struct{ Name, Subresource string }
				ResponseStatus   struct{ Code int }
			}
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("audit line %q: %v", line, err)
			}
			if e.Verb == "patch" && e.ObjectRef.Subresource == "" && e.ResponseStatus.Code < 300 &&
				strings.Contains(e.RequestURI, "fieldManager="+v1alpha1.FieldOwner+"&") {
				n[e.ObjectRef.Name]++
			}
		}
		return n
	}

	engage()
	first := writes()
	if first["routedips.shardgate.io"] != 1 || first["ingressclaims.shardgate.io"] != 1 {
		t.Fatalf("first engagement: CRD applies %v, want one of each", first)
	}
	engage()
	if again := writes(); !maps.Equal(again, first) {
		t.Fatalf("second engagement applied CRDs that were up to date: %v after %v", again, first)
	}

	// Someone relabels the RoutedIP CRD (a field Shardgate applies) with their own manager.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: "routedips.shardgate.io"}, crd); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(crd.DeepCopy())
	crd.Labels[v1alpha1.ManagedByLabel] = "someone"
	if err := cp.Client.Patch(ctx, crd, patch, client.FieldOwner("someone")); err != nil {
		t.Fatal(err)
	}
	engage()
	third := writes()
	if third["routedips.shardgate.io"] != 2 || third["ingressclaims.shardgate.io"] != 1 {
		t.Fatalf("after an edit of the RoutedIP CRD: CRD writes %v, want the RoutedIP CRD applied once more", third)
	}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: "routedips.shardgate.io"}, crd); err != nil {
		t.Fatal(err)
	}
	if got := crd.Labels[v1alpha1.ManagedByLabel]; got != v1alpha1.ManagedByValue {
		t.Fatalf("the edited label is %q after the engagement, want %q back", got, v1alpha1.ManagedByValue)
	}
}
