package sloconfig

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
)

// Layering: the effective strategy of a node is the defaults, overlaid by the cluster strategy, overlaid by the
// first node override whose selector matches the node's labels (objects merge field by field, lists are replaced;
// host applications are a list, so a matching node config replaces the cluster's applications). Each key is
// compiled once when it is parsed: selectors are built and every override is merged in advance, so finding a
// node's strategy is a selector match and a copy.

// compiled is one key's value, ready to be picked for nodes. It is never modified after compileKey returns.
type compiled[S any] struct {
	// sparse is the cluster strategy as written: what a NodeSLO shows for a node no override matches.
	sparse *S
	// effective is sparse with the defaults filled in.
	effective *S
	// overrides are the node overrides in the order written.
	overrides []override[S]
	// sparseJSON and effectiveJSON encode sparse and effective, so two snapshots compare a node's strategies as
	// strings instead of walking them.
	sparseJSON, effectiveJSON string
}

// override is one node override, merged with the cluster strategy.
type override[S any] struct {
	name                      string
	selector                  labels.Selector
	sparse                    *S
	effective                 *S
	sparseJSON, effectiveJSON string
}

// pick returns the strategy of a node with these labels: the first matching override's, else the cluster's.
func (c *compiled[S]) pick(nodeLabels labels.Labels) (sparse, effective *S) {
	if o := c.match(nodeLabels); o != nil {
		return o.sparse, o.effective
	}
	return c.sparse, c.effective
}

// pickJSON is pick, encoded.
func (c *compiled[S]) pickJSON(nodeLabels labels.Labels) (sparse, effective string) {
	if o := c.match(nodeLabels); o != nil {
		return o.sparseJSON, o.effectiveJSON
	}
	return c.sparseJSON, c.effectiveJSON
}

func (c *compiled[S]) match(nodeLabels labels.Labels) *override[S] {
	for i := range c.overrides {
		if c.overrides[i].selector.Matches(nodeLabels) {
			return &c.overrides[i]
		}
	}
	return nil
}

func (c *compiled[S]) overrideName(nodeLabels labels.Labels) string {
	if o := c.match(nodeLabels); o != nil {
		return o.name
	}
	return ""
}

// mustJSON encodes a value that came out of encoding/json; failing is a programmer's error.
func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("sloconfig: encoding %T: %v", v, err))
	}
	return string(b)
}

// nodeEntry is a node override as parsed, before merging.
type nodeEntry[S any] struct {
	profile  NodeCfgProfile
	strategy *S
}

// strategyKey describes how one key is split, merged, defaulted and validated.
type strategyKey[Cfg, S any] struct {
	// clusterPath is where the cluster strategy is in the key's JSON (nil: at the top level).
	clusterPath *field.Path
	// nodesPath is the name of the override list.
	nodesPath *field.Path
	// split returns the cluster strategy (nil when unset) and the overrides.
	split func(*Cfg) (*S, []nodeEntry[S])
	// merge overlays a node override on the cluster strategy; neither argument may be modified.
	merge func(cluster, node *S) *S
	// finish fills the defaults into a sparse strategy, returning a new value.
	finish func(sparse *S) *S
	// validateRaw checks a strategy as written (ranges, enums).
	validateRaw func(raw *S, path *field.Path) field.ErrorList
	// validateEffective checks a merged, defaulted strategy for fields that contradict each other.
	validateEffective func(effective *S, path *field.Path) field.ErrorList
	// intRange returns the range of the integer field at a path of the key's JSON without indexes
	// ("nodeStrategies.cpuEvictTimeWindowSeconds"), so that a value that is not an integer at all is told the range
	// too; ok is false where the key has no such field.
	intRange func(path string) (b intBounds, ok bool)
}

// parse decodes, validates and compiles one key's value.
func (k strategyKey[Cfg, S]) parse(r io.Reader) (any, []Finding, error) {
	cfg, findings, err := decode[Cfg](r, k.intRange)
	if err != nil {
		return nil, nil, err
	}
	c, errs := k.compile(cfg)
	if len(errs) > 0 {
		return nil, findings, errs.ToAggregate()
	}
	return c, findings, nil
}

// defaults is the compiled value of an absent key.
func (k strategyKey[Cfg, S]) defaults() any {
	c, errs := k.compile(new(Cfg))
	if len(errs) > 0 {
		panic("sloconfig: the defaults do not validate: " + errs.ToAggregate().Error())
	}
	return c
}

func (k strategyKey[Cfg, S]) compile(cfg *Cfg) (*compiled[S], field.ErrorList) {
	cluster, nodes := k.split(cfg)
	if cluster == nil {
		cluster = new(S)
	}
	var errs field.ErrorList
	if k.validateRaw != nil {
		errs = append(errs, k.validateRaw(cluster, k.clusterPath)...)
	}
	names := map[string]bool{}
	for i, n := range nodes {
		path := k.nodesPath.Index(i)
		errs = append(errs, validateProfile(n.profile, path, names)...)
		if k.validateRaw != nil && n.strategy != nil {
			errs = append(errs, k.validateRaw(n.strategy, path)...)
		}
	}
	if len(errs) > 0 {
		// Merging values out of range only repeats the same errors for every override.
		return nil, errs
	}
	c := &compiled[S]{sparse: cluster, effective: k.finish(cluster)}
	c.sparseJSON, c.effectiveJSON = mustJSON(c.sparse), mustJSON(c.effective)
	var clusterErrs field.ErrorList
	if k.validateEffective != nil {
		clusterErrs = k.validateEffective(c.effective, k.clusterPath)
		errs = append(errs, clusterErrs...)
	}
	for i, n := range nodes {
		sel, _ := metav1.LabelSelectorAsSelector(n.profile.NodeSelector) // validated by validateProfile
		sparse := k.merge(cluster, n.strategy)
		o := override[S]{name: n.profile.Name, selector: sel, sparse: sparse, effective: k.finish(sparse)}
		o.sparseJSON, o.effectiveJSON = mustJSON(o.sparse), mustJSON(o.effective)
		if k.validateEffective != nil && len(clusterErrs) == 0 {
			errs = append(errs, k.validateEffective(o.effective, k.nodesPath.Index(i))...)
		}
		c.overrides = append(c.overrides, o)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// keyDef is one ConfigMap key.
type keyDef struct {
	name     string
	parse    func(io.Reader) (any, []Finding, error)
	defaults func() any
}

func keyDefs() []keyDef {
	defs := []keyDef{
		def(ColocationConfigKey, colocationKey()),
		def(ResourceThresholdConfigKey, thresholdKey()),
		def(ResourceQOSConfigKey, qosKey()),
		def(CPUBurstConfigKey, cpuBurstKey()),
		def(SystemConfigKey, systemKey()),
		def(HostApplicationConfigKey, hostApplicationKey()),
		def(CPUNormalizationConfigKey, cpuNormalizationKey()),
		def(ResourceAmplificationConfigKey, resourceAmplificationKey()),
	}
	return defs
}

func def[Cfg, S any](name string, k strategyKey[Cfg, S]) keyDef {
	return keyDef{name: name, parse: k.parse, defaults: k.defaults}
}

var (
	clusterStrategyPath = field.NewPath("clusterStrategy")
	nodeStrategiesPath  = field.NewPath("nodeStrategies")
	nodeConfigsPath     = field.NewPath("nodeConfigs")
)

func colocationKey() strategyKey[ColocationCfg, ColocationStrategy] {
	return strategyKey[ColocationCfg, ColocationStrategy]{
		nodesPath: nodeConfigsPath,
		split: func(c *ColocationCfg) (*ColocationStrategy, []nodeEntry[ColocationStrategy]) {
			var nodes []nodeEntry[ColocationStrategy]
			for i := range c.NodeConfigs {
				n := &c.NodeConfigs[i]
				nodes = append(nodes, nodeEntry[ColocationStrategy]{profile: n.NodeCfgProfile, strategy: &n.ColocationStrategy})
			}
			return &c.ColocationStrategy, nodes
		},
		merge: slov1alpha1.MergeStrategy[ColocationStrategy],
		finish: func(s *ColocationStrategy) *ColocationStrategy {
			d := DefaultColocationStrategy()
			return slov1alpha1.MergeStrategy(&d, s)
		},
		validateRaw:       validateColocation,
		validateEffective: validateColocationConsistency,
		intRange:          colocationIntBounds,
	}
}

// nodeSLOKey is a key made of clusterStrategy and nodeStrategies whose strategy becomes the NodeSLO spec property
// prop: defaults filled in by withDefaults, ranges from the CRD schema of prop. parts returns the key's cluster strategy and
// overrides; override returns an override's profile and strategy.
func nodeSLOKey[Cfg, N, S any](prop string, withDefaults func(*S) *S, parts func(*Cfg) (*S, []N), override func(*N) (NodeCfgProfile, *S)) strategyKey[Cfg, S] {
	return strategyKey[Cfg, S]{
		clusterPath: clusterStrategyPath,
		nodesPath:   nodeStrategiesPath,
		split: func(c *Cfg) (*S, []nodeEntry[S]) {
			cluster, overrides := parts(c)
			var nodes []nodeEntry[S]
			for i := range overrides {
				profile, strategy := override(&overrides[i])
				nodes = append(nodes, nodeEntry[S]{profile: profile, strategy: strategy})
			}
			return cluster, nodes
		},
		merge:       slov1alpha1.MergeStrategy[S],
		finish:      withDefaults,
		validateRaw: schemaValidator[S](prop),
		intRange: func(path string) (intBounds, bool) {
			// The first element is clusterStrategy or nodeStrategies; the strategy's own fields follow.
			_, rest, _ := strings.Cut(path, ".")
			return schemaIntBoundsAt(prop, rest)
		},
	}
}

func thresholdKey() strategyKey[ResourceThresholdCfg, slov1alpha1.ResourceThresholdStrategy] {
	type S = slov1alpha1.ResourceThresholdStrategy
	k := nodeSLOKey("resourceUsedThresholdWithBE", (*S).WithDefaults,
		func(c *ResourceThresholdCfg) (*S, []NodeResourceThresholdStrategy) {
			return c.ClusterStrategy, c.NodeStrategies
		},
		func(n *NodeResourceThresholdStrategy) (NodeCfgProfile, *S) {
			return n.NodeCfgProfile, n.ResourceThresholdStrategy
		})
	k.validateEffective = validateThresholdConsistency
	return k
}

func qosKey() strategyKey[ResourceQOSCfg, slov1alpha1.ResourceQOSStrategy] {
	type S = slov1alpha1.ResourceQOSStrategy
	k := nodeSLOKey("resourceQOSStrategy", (*S).WithDefaults,
		func(c *ResourceQOSCfg) (*S, []NodeResourceQOSStrategy) { return c.ClusterStrategy, c.NodeStrategies },
		func(n *NodeResourceQOSStrategy) (NodeCfgProfile, *S) { return n.NodeCfgProfile, n.ResourceQOSStrategy })
	k.validateEffective = validateQOSConsistency
	return k
}

func cpuBurstKey() strategyKey[CPUBurstCfg, slov1alpha1.CPUBurstStrategy] {
	type S = slov1alpha1.CPUBurstStrategy
	return nodeSLOKey("cpuBurstStrategy", (*S).WithDefaults,
		func(c *CPUBurstCfg) (*S, []NodeCPUBurstCfg) { return c.ClusterStrategy, c.NodeStrategies },
		func(n *NodeCPUBurstCfg) (NodeCfgProfile, *S) { return n.NodeCfgProfile, n.CPUBurstStrategy })
}

func systemKey() strategyKey[SystemCfg, slov1alpha1.SystemStrategy] {
	type S = slov1alpha1.SystemStrategy
	return nodeSLOKey("systemStrategy", (*S).WithDefaults,
		func(c *SystemCfg) (*S, []NodeSystemStrategy) { return c.ClusterStrategy, c.NodeStrategies },
		func(n *NodeSystemStrategy) (NodeCfgProfile, *S) { return n.NodeCfgProfile, n.SystemStrategy })
}

// hostApplications is host-application-config's list as a strategy, so it compiles like the other keys.
type hostApplications struct {
	Applications []slov1alpha1.HostApplicationSpec `json:"applications,omitempty"`
}

func hostApplicationKey() strategyKey[HostApplicationCfg, hostApplications] {
	type S = hostApplications
	return strategyKey[HostApplicationCfg, S]{
		nodesPath: nodeConfigsPath,
		split: func(c *HostApplicationCfg) (*S, []nodeEntry[S]) {
			var nodes []nodeEntry[S]
			for _, n := range c.NodeConfigs {
				nodes = append(nodes, nodeEntry[S]{profile: n.NodeCfgProfile, strategy: &S{Applications: n.Applications}})
			}
			return &S{Applications: c.Applications}, nodes
		},
		// A node config's list replaces the cluster's, even when it is empty.
		merge:  func(_, node *S) *S { return slov1alpha1.MergeStrategy(&S{}, node) },
		finish: func(s *S) *S { return slov1alpha1.MergeStrategy(&S{}, s) },
		validateRaw: func(raw *S, path *field.Path) field.ErrorList {
			if len(raw.Applications) == 0 {
				return nil
			}
			p := path.Child("applications")
			errs := validateSchema("hostApplications", raw.Applications, p)
			return append(errs, validateHostApplications(raw.Applications, p)...)
		},
		intRange: func(path string) (intBounds, bool) {
			return schemaIntBoundsAt("hostApplications", strings.TrimPrefix(strings.TrimPrefix(path, "nodeConfigs."), "applications"))
		},
	}
}

// schemaValidator checks a strategy against the NodeSLO spec property it becomes.
func schemaValidator[S any](prop string) func(*S, *field.Path) field.ErrorList {
	return func(raw *S, path *field.Path) field.ErrorList { return validateSchema(prop, raw, path) }
}
