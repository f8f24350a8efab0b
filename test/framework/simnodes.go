package framework

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	//go:embed kwok-stages.yaml
	kwokStages string
	//go:embed kwok-node-status.tmpl
	kwokNodeStatus string
)

const (
	// kwokNodeAnnotation marks the nodes kwok manages.
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	// simReadyLabel set to "false" makes kwok report the node NotReady (see kwok-stages.yaml).
	simReadyLabel = "sim.shardgate.io/ready"
)

// simulatedNodes is the per-cluster stack that turns Deployments into Ready pods on Nodes that
// exist only as API objects.
type simulatedNodes struct{ procs []*Process }

func (s *simulatedNodes) stop() {
	for i := len(s.procs) - 1; i >= 0; i-- {
		_ = s.procs[i].Stop()
	}
}

func (cp *ControlPlane) startSimulatedNodes() error {
	tools, err := LocateTools(ToolKubeScheduler, ToolKubeControllerManager, ToolKwok)
	if err != nil {
		return err
	}
	stages := filepath.Join(cp.Dir, "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(renderKwokStages()), 0o644); err != nil {
		return err
	}
	kc := cp.AdminKubeconfig
	saKey := filepath.Join(cp.env.ControlPlane.APIServer.CertDir, "sa-signer.key")
	specs := []ProcessSpec{
		{Name: "kube-scheduler", Path: tools.Path(ToolKubeScheduler), Args: []string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--leader-elect=false", "--secure-port=0",
		}},
		{Name: "kube-controller-manager", Path: tools.Path(ToolKubeControllerManager), Args: []string{
			"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--controllers=*", "--leader-elect=false", "--secure-port=0",
			"--service-account-private-key-file=" + saKey, "--use-service-account-credentials=false",
			"--root-ca-file=" + cp.rootCA(),
			// Quick reaction keeps node and endpoint changes visible within seconds.
			"--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10",
		}},
		{Name: "kwok", Path: tools.Path(ToolKwok), Args: []string{
			"--kubeconfig=" + kc, "--config=" + stages,
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--node-lease-duration-seconds=40", "--server-address=",
		}},
	}
	sim := &simulatedNodes{}
	for _, s := range specs {
		p, err := StartProcess(cp.Dir, s)
		if err != nil {
			sim.stop()
			return err
		}
		sim.procs = append(sim.procs, p)
	}
	cp.mu.Lock()
	cp.sim = sim
	cp.mu.Unlock()
	// Give the processes a moment to fail on bad flags, so errors surface here and not as
	// timeouts later.
	time.Sleep(500 * time.Millisecond)
	for _, p := range sim.procs {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%s exited: %w\n%s", p.Name, err, p.Tail(2000))
		}
	}
	return nil
}

func renderKwokStages() string {
	indented := "      " + strings.ReplaceAll(strings.TrimRight(kwokNodeStatus, "\n"), "\n", "\n      ")
	return strings.ReplaceAll(kwokStages, "      {{NODE_STATUS}}", indented)
}

// NodeSpec describes a simulated node.
type NodeSpec struct {
	Name       string
	InternalIP string
	ExternalIP string
	Labels     map[string]string
	Taints     []corev1.Taint
}

// AddNode creates a simulated node managed by kwok and waits until it is Ready.
func (cp *ControlPlane) AddNode(ctx context.Context, spec NodeSpec) error {
	labels := map[string]string{"kubernetes.io/hostname": spec.Name, "kubernetes.io/os": "linux", "type": "kwok"}
	for k, v := range spec.Labels {
		labels[k] = v
	}
	var addrs []corev1.NodeAddress
	if spec.InternalIP != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: spec.InternalIP})
	}
	if spec.ExternalIP != "" {
		addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: spec.ExternalIP})
	}
	addrs = append(addrs, corev1.NodeAddress{Type: corev1.NodeHostName, Address: spec.Name})
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        spec.Name,
			Labels:      labels,
			Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		},
		Spec: corev1.NodeSpec{Taints: spec.Taints},
	}
	if err := cp.Client.Create(ctx, node); err != nil {
		return fmt.Errorf("create node %s: %w", spec.Name, err)
	}
	// Status is written by the "kubelet": the addresses here, the conditions by kwok (which may
	// write between our create and this update, hence the retry).
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: spec.Name}, node); err != nil {
			return err
		}
		node.Status.Addresses = addrs
		return cp.Client.Status().Update(ctx, node)
	})
	if err != nil {
		return fmt.Errorf("set addresses of node %s: %w", spec.Name, err)
	}
	return cp.WaitNodeReady(ctx, spec.Name, true)
}

// DeleteNode deletes a node (kube-controller-manager then removes its pods).
func (cp *ControlPlane) DeleteNode(ctx context.Context, name string) error {
	err := cp.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// CordonNode sets or clears spec.unschedulable.
func (cp *ControlPlane) CordonNode(ctx context.Context, name string, cordon bool) error {
	node := &corev1.Node{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Unschedulable = cordon
	return cp.Client.Patch(ctx, node, patch)
}

// SetNodeReady makes kwok report the node Ready or NotReady and waits until it does.
func (cp *ControlPlane) SetNodeReady(ctx context.Context, name string, ready bool) error {
	node := &corev1.Node{}
	if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
		return err
	}
	patch := client.MergeFrom(node.DeepCopy())
	if ready {
		delete(node.Labels, simReadyLabel)
	} else {
		node.Labels[simReadyLabel] = "false"
	}
	if err := cp.Client.Patch(ctx, node, patch); err != nil {
		return err
	}
	return cp.WaitNodeReady(ctx, name, ready)
}

// WaitNodeReady waits until the node's Ready condition is (or is not) True.
func (cp *ControlPlane) WaitNodeReady(ctx context.Context, name string, ready bool) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := waitFor(ctx, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
		node := &corev1.Node{}
		if err := cp.Client.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
			return false, err
		}
		return nodeReady(node) == ready, nil
	})
	if err != nil {
		return fmt.Errorf("node %s Ready=%v: %w", name, ready, err)
	}
	return nil
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// rootCA is the file kube-controller-manager publishes as kube-root-ca.crt: the harness CA of a
// control plane prepared for real nodes, else envtest's serving certificate.
func (cp *ControlPlane) rootCA() string {
	dir := cp.env.ControlPlane.APIServer.CertDir
	if _, err := os.Stat(filepath.Join(dir, "ca.crt")); err == nil {
		return filepath.Join(dir, "ca.crt")
	}
	return filepath.Join(dir, "apiserver.crt")
}
