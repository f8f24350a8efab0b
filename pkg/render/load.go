package render

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/shardgate/shardgate/api/v1alpha1"
	"github.com/shardgate/shardgate/pkg/names"
	"github.com/shardgate/shardgate/pkg/routerload"
)

// LoadMetrics is where a flavour's routers expose their own metrics for the load reporter.
type LoadMetrics struct {
	// Path and Port of the metrics on the router's loopback (the node's on the host network).
	Path string
	Port int32
	// Format is how the reporter reads them; "": the flavour exposes none it reads.
	Format routerload.Format
	// AdminEntryPoint is left out of the request figures (probes and scrapes, not routes).
	AdminEntryPoint string
	// Args turn the metrics on in the router's container.
	Args []string
	// Capacity is the requests per second one router serves at full utilization by default.
	Capacity int32
}

const (
	loadReporterName = "load-reporter"
	// loadClusterRole lets load reporters renew their report Leases (bound in shardgate-system).
	loadClusterRole = "shardgate-router-load"
)

// ReportsLoad says whether a shard's routers run a load reporter: the shard asks for load
// (ShardSpec.Load, implied by LeastUtilized) and its flavour exposes metrics the reporter reads.
func ReportsLoad(f Flavour, s v1alpha1.ShardSpec) bool {
	return s.Load != nil && f.LoadMetrics().Format != ""
}

// LoadCapacity is one router's capacity in requests per second: the shard's, else its flavour's.
func LoadCapacity(f Flavour, s v1alpha1.ShardSpec) int32 {
	if s.Load != nil && s.Load.RequestsPerSecond != nil {
		return *s.Load.RequestsPerSecond
	}
	return f.LoadMetrics().Capacity
}

// SaturationPercent is the shard's saturation threshold, defaulted.
func SaturationPercent(s v1alpha1.ShardSpec) int32 {
	if s.Load != nil && s.Load.SaturationPercent != nil {
		return *s.Load.SaturationPercent
	}
	return routerload.DefaultSaturationPercent
}

// loadReporter is the reporter's container: it reads the router's metrics on the loopback and
// renews its pod's Lease with the router's token, as nobody, without any capability.
func loadReporter(f Flavour, s v1alpha1.ShardSpec) corev1.Container {
	m := f.LoadMetrics()
	image := VIPAgentImage
	if s.Load.ReporterImage != "" {
		image = s.Load.ReporterImage
	}
	env := func(name, path string) corev1.EnvVar {
		return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
	}
	return corev1.Container{
		Name: loadReporterName, Image: image, ImagePullPolicy: s.ImagePullPolicy,
		Command: []string{vipAgentBinary},
		Args: []string{"load", "--shard=" + s.Name, "--pod-name=$(POD_NAME)", "--pod-uid=$(POD_UID)",
			"--namespace=$(POD_NAMESPACE)", fmt.Sprintf("--metrics-url=http://127.0.0.1:%d%s", m.Port, m.Path),
			"--format=" + string(m.Format), "--admin-entrypoint=" + m.AdminEntryPoint},
		Env: []corev1.EnvVar{env("POD_NAME", "metadata.name"), env("POD_UID", "metadata.uid"),
			env("POD_NAMESPACE", "metadata.namespace")},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
		},
		SecurityContext: &corev1.SecurityContext{
			RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](vipAgentUser), RunAsGroup: ptr.To[int64](vipAgentUser),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
	}
}

// loadRole lets a reporter get, create and renew its report Lease. One role serves every shard,
// so it cannot name each pod's Lease: bound in shardgate-system only.
func loadRole() *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{
		ObjectMeta: objectMeta(loadClusterRole, "", managedLabels("")),
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "create", "update"}},
		},
	}
}

// loadObjects are the reporters' role (shared) and its binding to the shard's routers.
func loadObjects(name string, labels map[string]string) []Object {
	return []Object{{rbacv1.SchemeGroupVersion.WithKind("ClusterRole"), loadRole()},
		{rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), &rbacv1.RoleBinding{
			ObjectMeta: objectMeta(name+"-load", names.Namespace, labels),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: loadClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: name, Namespace: names.Namespace}},
		}}}
}

// LoadShard is what routerload.Observe decides a load-reporting shard's load from: its capacity
// and threshold, its ready routers and its routers' reports; previous is the state last recorded.
func LoadShard(s v1alpha1.ShardSpec, ready int32, reports []routerload.Report, previous v1alpha1.ShardLoadState,
) routerload.Shard {
	f, ok := FlavourFor(s.Flavour)
	if !ok {
		f = Traefik{}
	}
	return routerload.Shard{Name: s.Name, Capacity: LoadCapacity(f, s), SaturationPercent: SaturationPercent(s),
		ReadyRouters: ready, Reports: reports, Previous: previous}
}

// FollowedScale is what routerload.Replicas decides a shard's replicas from, but the load: the
// shard's least (its replicas in the profile, min) and most, target and delay, its ready routers,
// the nodes its routers may take (eligible: a bound wherever they spread one per node), and the
// last decision.
func FollowedScale(s v1alpha1.ShardSpec, min, ready, eligible int32, last *v1alpha1.ShardLoadStatus) routerload.Scale {
	sc := routerload.Scale{Min: min, Max: *s.Load.MaxReplicas, Target: routerload.DefaultTargetPercent,
		Delay: routerload.DefaultScaleDownDelay, Ready: ready, Eligible: eligible, Bounded: spreads(s)}
	if s.Load.TargetPercent != nil {
		sc.Target = *s.Load.TargetPercent
	}
	if s.Load.ScaleDownDelay != nil {
		sc.Delay = s.Load.ScaleDownDelay.Duration
	}
	if last != nil {
		sc.Current, sc.BelowSince = last.Replicas, last.BelowTargetSince
	}
	return sc
}

// RouterMayRun says whether a shard's router may run on a node: its nodeSelector matches, the node
// is schedulable and Ready, and the router tolerates its NoSchedule and NoExecute taints.
func RouterMayRun(s v1alpha1.ShardSpec, n *corev1.Node) bool {
	if n.Spec.Unschedulable || !labels.SelectorFromSet(s.NodeSelector).Matches(labels.Set(n.Labels)) {
		return false
	}
	ready := false
	for _, c := range n.Status.Conditions {
		ready = ready || (c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue)
	}
	if !ready {
		return false
	}
	tolerations := tolerations(s)
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(tol corev1.Toleration) bool { return tol.ToleratesTaint(klog.Background(), t, false) }) {
			return false
		}
	}
	return true
}
