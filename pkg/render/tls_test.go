package render

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
)

func renderTLS(t *testing.T, s v1alpha1.ShardSpec, tls *TLSInput) *appsv1.Deployment {
	t.Helper()
	s = v1alpha1.ResolveShards([]v1alpha1.ShardSpec{s})[0]
	objs, err := RenderShard(Traefik{}, RenderInput{Domain: "c1.example.test", Shard: s, DNSTTL: 60, TLS: tls})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "Deployment" {
			return as[appsv1.Deployment](t, o)
		}
	}
	t.Fatal("no Deployment")
	return nil
}

func TestTraefikTLS(t *testing.T) {
	for _, p := range []v1alpha1.Publishing{v1alpha1.PublishHostNetwork, v1alpha1.PublishNodePort} {
		d := renderTLS(t, v1alpha1.ShardSpec{Name: "edge", Publishing: p}, &TLSInput{RedirectHTTP: true})
		pod := d.Spec.Template.Spec
		args := pod.Containers[0].Args
		for _, want := range []string{"--entryPoints.websecure.http.tls=true", "--providers.file.directory=/etc/shardgate/tls",
			"--providers.file.watch=true", "--entryPoints.web.http.redirections.entryPoint.to=:443"} {
			if !slices.Contains(args, want) {
				t.Errorf("%s: no %s in %v", p, want, args)
			}
		}
		// The TLS volume first, then the API token's (TestAPITokenOnlyWhereNeeded).
		if len(pod.Volumes) != 2 || pod.Volumes[0].Name != tlsVolume || pod.Volumes[0].Projected == nil ||
			len(pod.Volumes[0].Projected.Sources) != 2 {
			t.Fatalf("%s: volumes %+v", p, pod.Volumes)
		}
		proj := pod.Volumes[0].Projected
		if sec := proj.Sources[1].Secret; sec == nil || sec.Name != names.TLSSecretName || sec.Optional == nil || !*sec.Optional {
			t.Errorf("%s: the key pair must be an optional projection of %s: %+v", p, names.TLSSecretName, proj.Sources[1])
		}
		// Readable by the router's user (root owner or 65532 by group), not by others.
		if *proj.DefaultMode != 0o440 || pod.SecurityContext == nil || *pod.SecurityContext.FSGroup != routerGroup {
			t.Errorf("%s: mode %o, pod securityContext %+v", p, *proj.DefaultMode, pod.SecurityContext)
		}
		if m := pod.Containers[0].VolumeMounts; len(m) != 2 || !m[0].ReadOnly || m[0].MountPath != tlsMountPath {
			t.Errorf("%s: mounts %+v", p, m)
		}
	}
	plain := renderTLS(t, v1alpha1.ShardSpec{Name: "edge"}, nil)
	if len(plain.Spec.Template.Spec.Volumes) != 1 || slices.Contains(plain.Spec.Template.Spec.Containers[0].Args, "--entryPoints.websecure.http.tls=true") {
		t.Error("TLS rendered without TLS")
	}
	noRedirect := renderTLS(t, v1alpha1.ShardSpec{Name: "edge"}, &TLSInput{})
	if strings.Contains(strings.Join(noRedirect.Spec.Template.Spec.Containers[0].Args, " "), "redirections") {
		t.Error("redirect without redirectHTTP")
	}
	// The key pair does not shape the router: a renewal is no rollout.
	a := renderTLS(t, v1alpha1.ShardSpec{Name: "edge"}, &TLSInput{Cert: []byte("a"), Key: []byte("a")})
	b := renderTLS(t, v1alpha1.ShardSpec{Name: "edge"}, &TLSInput{Cert: []byte("b"), Key: []byte("b")})
	if !slices.EqualFunc(a.Spec.Template.Spec.Containers[0].Args, b.Spec.Template.Spec.Containers[0].Args, func(x, y string) bool { return x == y }) {
		t.Error("router args depend on the key pair")
	}
}

func TestTLSObjects(t *testing.T) {
	kinds := func(objs []*unstructured.Unstructured) []string {
		var k []string
		for _, o := range objs {
			k = append(k, o.GetKind())
		}
		return k
	}
	none, err := TLSObjects(&TLSInput{}, Traefik{})
	if err != nil || !slices.Equal(kinds(none), []string{"ConfigMap"}) {
		t.Fatalf("before issuance: %v %v", kinds(none), err)
	}
	if cm := as[corev1.ConfigMap](t, none[0]); strings.Contains(cm.Data[tlsConfigFile], "certFile") {
		t.Errorf("configuration names a key pair that does not exist: %s", cm.Data[tlsConfigFile])
	}
	some, err := TLSObjects(&TLSInput{Cert: []byte("CERT"), Key: []byte("KEY"), CA: []byte("CA")}, Traefik{})
	if err != nil || !slices.Equal(kinds(some), []string{"Secret", "ConfigMap"}) {
		t.Fatalf("issued: %v %v", kinds(some), err)
	}
	s := as[corev1.Secret](t, some[0])
	if s.Type != corev1.SecretTypeTLS || string(s.Data["tls.key"]) != "KEY" || string(s.Data["ca.crt"]) != "CA" || s.Name != names.TLSSecretName {
		t.Errorf("secret %+v", s)
	}
	if cm := as[corev1.ConfigMap](t, some[1]); !strings.Contains(cm.Data[tlsConfigFile], "certFile: /etc/shardgate/tls/tls.crt") {
		t.Errorf("configuration: %s", cm.Data[tlsConfigFile])
	}
}
