// Package framework is the contract between the noderesource controller and its plugins: the extension points a
// plugin may implement, what the controller passes to each, and the registry that orders them.
//
// One reconcile of a node runs the stages in this order:
//
//	Setup        once per plugin, when the controller is built
//	Calculate    every CalculatePlugin, in registration order; Reset instead when colocation is off for the node
//	Annotate     every AnnotatePlugin, in registration order, whether colocation is on or off
//	PreUpdate    every PreUpdatePlugin, once per reconcile (may write other objects)
//	Prepare      every PreparePlugin, on a copy of the Node (may run again on a fresh copy after a conflict)
//	NeedSync     every NeedSyncPlugin; the node status is written when one says yes
//
// Koordinator's framework lets every Calculate return node labels and annotations and has a NeedSyncMeta stage to
// compare them. Here the annotations have a stage of their own, Annotate, and the controller writes and compares
// them itself: a plugin says what each of its annotations should be, and the node is written when one differs.
//
// A plugin implements Plugin and any subset of the stage interfaces; the framework finds its stages by type
// assertion. Plugins must not keep per-node state between reconciles: the controller may run reconciles of
// different nodes concurrently, and a node's inputs are all in Input.
package framework

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/controllers/podcache"
	"github.com/gleaner-sh/gleaner/pkg/sloconfig"
)

// Plugin is what every node-resource plugin implements.
type Plugin interface {
	// Name identifies the plugin in the registry, in logs, in explanations and in the --noderesource-plugins flag.
	// It must be unique and constant.
	Name() string
}

// SetupPlugin prepares a plugin before any reconcile.
type SetupPlugin interface {
	Plugin
	// Setup is called once, before the controller starts. A plugin keeps the clients it needs and may add watches
	// to opts.Builder (mapping events to the node to reconcile). An error stops the manager from starting.
	Setup(opts *SetupOptions) error
}

// SetupOptions is what a plugin may use to set itself up.
type SetupOptions struct {
	// Client reads through the manager's cache and writes to the API server.
	Client client.Client
	// Scheme knows every kind the manager handles.
	Scheme *runtime.Scheme
	// Recorder records events.
	Recorder events.EventRecorder
	// Builder is the controller's builder; a plugin adds watches with Watches or WatchesRawSource.
	Builder *builder.Builder
	// Clock is the controller's time source.
	Clock clock.PassiveClock
}

// CalculatePlugin computes reclaimed resources for a node.
type CalculatePlugin interface {
	Plugin
	// Calculate returns one item per resource the plugin publishes for in.Node. When its inputs are unusable (no
	// NodeMetric, a stale one) it returns the items of Reset with the reason instead: it degrades, it does not
	// fail. An error means a bug or an impossible input; the controller then resets the plugin's resources, logs the
	// error and records a Warning event.
	Calculate(in *Input) ([]ResourceItem, error)
	// Reset returns the items that remove every resource the plugin publishes, each with Reset set and message as
	// its reason. The controller calls it instead of Calculate when colocation is disabled for the node.
	Reset(node *corev1.Node, message string) []ResourceItem
}

// AnnotatePlugin owns node annotations that are not reclaimed resources, such as the CPU normalization ratio.
type AnnotatePlugin interface {
	Plugin
	// Annotate returns what the plugin wants of each node annotation it owns. It runs in every reconcile, after every
	// Calculate, whether colocation is on for the node or not; nr.Annotations holds what the AnnotatePlugins before
	// it returned in this reconcile, so one may build on another's (resource amplification on CPU normalization).
	// An error leaves the plugin's annotations on the node as they are; the controller logs it and records a
	// Warning event. Annotations the plugin does not return are left alone.
	Annotate(in *Input, nr *NodeResource) ([]AnnotationItem, error)
}

// AnnotationItem is one plugin's result for one node annotation.
type AnnotationItem struct {
	// Key is the annotation's key.
	Key string
	// Value is the annotation's value; nil removes it.
	Value *string
	// Source names the configuration the value came from (see slov1alpha1.AnnotationDerivation).
	Source string
	// Reason says how the value came about, or why the annotation is removed.
	Reason string
}

// PreUpdatePlugin acts on the complete calculation before the node is written.
type PreUpdatePlugin interface {
	Plugin
	// PreUpdate runs once per reconcile, after every Calculate. It may write other objects (such as the node's
	// NodeResourceTopology) and may adjust nr. The controller does not retry it: a plugin that needs a retry does it
	// itself. An error is logged and recorded; the node is still updated.
	PreUpdate(ctx context.Context, in *Input, nr *NodeResource) error
}

// PreparePlugin writes the calculation into the Node object.
type PreparePlugin interface {
	Plugin
	// Prepare sets the plugin's resources (and any labels or annotations) on node, a copy the controller will
	// write. It must be idempotent and must not touch anything but node: the controller may call it again on a
	// fresh copy when the write conflicts.
	Prepare(in *Input, node *corev1.Node, nr *NodeResource) error
}

// NeedSyncPlugin decides whether the node's status must be written.
type NeedSyncPlugin interface {
	Plugin
	// NeedSync compares the node as it is (oldNode) with the node as prepared (newNode) and says whether the
	// difference in the plugin's resources is worth a write, with the reason. A change below the strategy's
	// resourceDiffThreshold is not; a resource that appears or disappears always is.
	NeedSync(strategy *sloconfig.ColocationStrategy, oldNode, newNode *corev1.Node) (bool, string)
}

// Input is everything a plugin may know about one node in one reconcile. Plugins must treat it as read-only: the
// objects are shared with the controller's cache.
type Input struct {
	// Node is the node as the cache has it.
	Node *corev1.Node
	// Pods are the pods bound to the node, in every phase, as the manager's pod cache holds them.
	Pods []*podcache.Pod
	// Metric is the node's NodeMetric; nil when it does not exist.
	Metric *slov1alpha1.NodeMetric
	// Topology is the node's NUMA zones from its NodeResourceTopology; nil when it has none.
	Topology *Topology
	// Strategy is the node's merged, defaulted colocation strategy.
	Strategy *sloconfig.ColocationStrategy
	// Config is the slo-controller-config snapshot of this reconcile (Strategy comes from it), for plugins that read
	// other keys.
	Config *sloconfig.Snapshot
	// Now is the time of the reconcile, from the controller's clock.
	Now time.Time

	podRecords  map[podRecordKey]int
	reservation *reservation
	outOfRange  map[corev1.ResourceName]string
}

// ResourceItem is one plugin's result for one resource.
type ResourceItem struct {
	// Name is the resource, such as kubernetes.io/batch-cpu.
	Name corev1.ResourceName
	// Quantity is the node-level value; nil when Reset is set.
	Quantity *resource.Quantity
	// ZoneQuantity is the value per NUMA zone (zone name to quantity), when the node has a topology.
	ZoneQuantity map[string]resource.Quantity
	// Message says how the value came about, or why the resource is reset.
	Message string
	// Reset removes the resource from the node.
	Reset bool
	// Urgent, when set, says why the value must reach the node at once: the node is written when the value differs
	// at all from the node's, however little (resourceDiffThreshold does not apply).
	Urgent string
	// Derivation explains the value term by term; the controller publishes it with the value.
	Derivation *slov1alpha1.ResourceDerivation
}
