// Package chart describes the Helm chart charts/gleaner from Gleaner's code: the flags of gleaner-manager and
// gleaner-agent, which of them the chart's templates set themselves, and the JSON schema of its values
// (values.schema.json, written by `make generate`). The schema's manager.flags and agent.flags come from the
// binaries' own flag sets, so helm refuses a misspelt flag or a value of the wrong type when the chart is
// installed, rather than the binary when it starts, and a new flag reaches the schema with `make generate`.
package chart

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/gleaner-sh/gleaner/internal/logging"
	"github.com/gleaner-sh/gleaner/pkg/agent"
	"github.com/gleaner-sh/gleaner/pkg/manager"
)

// Components are the chart's values sections for the binaries, each named after its container.
var Components = []string{"manager", "agent"}

// SetByTemplates are the flags the chart's templates set themselves, each from a value of its own or fixed, rather
// than through manager.flags / agent.flags: the addresses (their ports are the containers' ports), the paths the
// agent's volumes are mounted at, the webhook's names (the chart's Service and the RBAC markers' resourceNames),
// the node's name (the downward API) and kubeconfig (in-cluster).
var SetByTemplates = map[string][]string{
	"manager": {"kubeconfig", "namespace", "leader-elect", "metrics-bind-address", "health-probe-bind-address",
		"webhook-cert-dir", "webhook-port", "webhook-service-name", "webhook-configuration-name",
		"webhook-mutating-configuration-name"},
	"agent": {"kubeconfig", "node-name", "proc-root", "sys-root", "sysctl-root", "state-dir", "cgroup-root",
		"metrics-bind-address", "health-probe-bind-address", "runtime-hook", "nri-socket"},
}

// FlagSet returns the flags of the binary a component runs ("manager", "agent"), bound to fresh options, with the
// log flags its main adds; nil for another name.
func FlagSet(component string) *pflag.FlagSet {
	fs := pflag.NewFlagSet("gleaner-"+component, pflag.ContinueOnError)
	switch component {
	case "manager":
		manager.NewOptions().AddFlags(fs)
	case "agent":
		agent.NewOptions().AddFlags(fs)
	default:
		return nil
	}
	logging.NewOptions().AddFlags(fs)
	return fs
}

// schema is a JSON schema node.
type schema = map[string]any

func typed(types ...string) schema { return schema{"type": types} }

func object(props map[string]schema) schema {
	return schema{"type": "object", "additionalProperties": false, "properties": props}
}

// freeObject is an object of any keys (labels, affinity, a resources block).
func freeObject() schema { return schema{"type": "object"} }

func list(items schema) schema { return schema{"type": "array", "items": items} }

const durationPattern = `^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$`

// positiveDurationPattern is durationPattern less 0, for a time that must pass.
const positiveDurationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`

// quantityPattern is a Kubernetes quantity (64Mi, 1G, 0.5), as the API server's OpenAPI has it.
const quantityPattern = `^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$`

// flagSchema is the schema of one flag's value; null keeps the binary's default.
func flagSchema(f *pflag.Flag) (schema, error) {
	s := schema{"description": fmt.Sprintf("--%s: %s (default %q)", f.Name, f.Usage, f.DefValue)}
	switch f.Value.Type() {
	case "bool":
		s["type"] = []string{"boolean", "null"}
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		s["type"] = []string{"integer", "null"}
	case "float32", "float64":
		s["type"] = []string{"number", "null"}
	case "duration":
		s["type"] = []string{"string", "null"}
		s["pattern"] = durationPattern
	case "string", "encoder", "time-encoding":
		s["type"] = []string{"string", "null"}
	case "quantity":
		s["type"] = []string{"string", "integer", "null"}
		s["pattern"] = quantityPattern
	case "level":
		s["type"] = []string{"string", "integer", "null"}
	case "strings", "stringSlice":
		s["type"] = []string{"array", "string", "null"}
		s["items"] = typed("string")
	case "name=duration,...":
		s["type"] = []string{"object", "string", "null"}
		s["additionalProperties"] = schema{"type": "string", "pattern": durationPattern}
	default:
		return nil, fmt.Errorf("--%s: no schema for a flag of type %q: add it to internal/chart", f.Name, f.Value.Type())
	}
	return s, nil
}

// flagsSchema is the schema of manager.flags or agent.flags: every flag of the binary but those SetByTemplates.
func flagsSchema(component string) (schema, error) {
	props := map[string]schema{}
	var err error
	FlagSet(component).VisitAll(func(f *pflag.Flag) {
		for _, set := range SetByTemplates[component] {
			if f.Name == set {
				return
			}
		}
		s, ferr := flagSchema(f)
		if ferr != nil && err == nil {
			err = ferr
		}
		props[f.Name] = s
	})
	if err != nil {
		return nil, err
	}
	s := object(props)
	s["description"] = "gleaner-" + component + "'s flags by name; null keeps the binary's default"
	return s, nil
}

// image is the schema of manager.image and agent.image.
func image() schema {
	return object(map[string]schema{"repository": typed("string"), "tag": typed("string"), "pullPolicy": pullPolicy(true)})
}

func pullPolicy(emptyToo bool) schema {
	values := []any{"Always", "IfNotPresent", "Never"}
	if emptyToo {
		values = append(values, "")
	}
	return schema{"type": "string", "enum": values}
}

// workload is what manager and agent have in common.
func workload(flags schema, extra map[string]schema) schema {
	props := map[string]schema{
		"image":                         image(),
		"metricsBindAddress":            typed("string"),
		"healthProbeBindAddress":        typed("string"),
		"flags":                         flags,
		"extraArgs":                     list(typed("string")),
		"goGC":                          typed("string", "integer"),
		"env":                           list(freeObject()),
		"sizing":                        typed("string"),
		"resources":                     freeObject(),
		"terminationGracePeriodSeconds": typed("integer"),
		"hostNetwork":                   typed("boolean"),
		"priorityClassName":             typed("string"),
		"nodeSelector":                  {"type": "object", "additionalProperties": typed("string")},
		"tolerations":                   list(freeObject()),
		"affinity":                      freeObject(),
		"podAnnotations":                {"type": "object", "additionalProperties": typed("string")},
		"podLabels":                     {"type": "object", "additionalProperties": typed("string")},
		"podSecurityContext":            freeObject(),
		"extraVolumes":                  list(freeObject()),
		"extraVolumeMounts":             list(freeObject()),
	}
	for k, v := range extra {
		props[k] = v
	}
	return object(props)
}

// Schema returns values.schema.json: every value of charts/gleaner/values.yaml with its type, unknown keys refused.
func Schema() ([]byte, error) {
	mflags, err := flagsSchema("manager")
	if err != nil {
		return nil, err
	}
	aflags, err := flagsSchema("agent")
	if err != nil {
		return nil, err
	}
	row := object(map[string]schema{"requests": freeObject(), "limits": freeObject()})
	intOrPercent := schema{"type": []string{"integer", "string", "null"}, "pattern": `^[0-9]+%?$`}
	root := object(map[string]schema{
		// Helm gives every chart of an umbrella chart its parent's global values; refusing them would refuse being a
		// dependency. The chart reads none.
		"global": {"type": "object", "description": "an umbrella chart's global values (Helm passes them to every subchart); the chart reads none"},
		"namespace": object(map[string]schema{
			"create": typed("boolean"),
			"podSecurity": object(map[string]schema{
				"enforce": typed("string"), "enforceVersion": typed("string"),
				"audit": typed("string"), "auditVersion": typed("string"),
			}),
			"labels": {"type": "object", "additionalProperties": typed("string")},
		}),
		"priorityClasses": object(map[string]schema{"create": typed("boolean"), "koordinatorNames": typed("boolean")}),
		"policies":        object(map[string]schema{"enabled": typed("boolean")}),
		"rbac":            object(map[string]schema{"readerRoles": typed("boolean")}),
		"giveBack": object(map[string]schema{"enabled": typed("boolean"), "timeout": {"type": "string", "pattern": positiveDurationPattern,
			"description": "how long the pre-delete Job waits for the manager to take its resources off the Nodes (a Go duration: 2m; more on clusters of thousands of nodes)"}}),
		"webhook": object(map[string]schema{
			"failurePolicy": {"type": "object", "additionalProperties": schema{"type": "string", "enum": []any{"Fail", "Ignore"}},
				"description": "failurePolicy per webhook, by its name; one not named keeps config/webhook's"},
			"timeoutSeconds": {"type": []string{"integer", "null"}, "minimum": 1, "maximum": 30},
		}),
		"certManager": object(map[string]schema{
			"enabled": typed("boolean"),
			"issuerRef": object(map[string]schema{
				"name": typed("string"), "kind": typed("string"), "group": typed("string"),
			}),
		}),
		"metrics": object(map[string]schema{
			"service": object(map[string]schema{"enabled": typed("boolean")}),
			"serviceMonitor": object(map[string]schema{
				"enabled":           typed("boolean"),
				"labels":            {"type": "object", "additionalProperties": typed("string")},
				"interval":          {"type": "string", "pattern": `^(|[0-9]+(ms|s|m|h))+$`},
				"scrapeTimeout":     {"type": "string", "pattern": `^(|[0-9]+(ms|s|m|h))+$`},
				"tlsConfig":         freeObject(),
				"bearerTokenFile":   typed("string"),
				"authorization":     freeObject(),
				"relabelings":       list(freeObject()),
				"metricRelabelings": list(freeObject()),
			}),
			"prometheusRule": object(map[string]schema{
				"enabled": typed("boolean"),
				"labels":  {"type": "object", "additionalProperties": typed("string")},
			}),
			"readerSubjects": list(freeObject()),
		}),
		"sloConfig": {"type": []string{"object", "null"}, "additionalProperties": typed("string", "object"),
			"description": "slo-controller-config's data keys (docs/configuration.md), each a JSON string or an object"},
		"image": object(map[string]schema{
			"registry": typed("string"), "pullPolicy": pullPolicy(false), "pullSecrets": list(freeObject()),
		}),
		"manager": workload(mflags, map[string]schema{
			"replicas":                  {"type": "integer", "minimum": 0},
			"leaderElect":               typed("boolean"),
			"webhookPort":               {"type": "integer", "minimum": 1, "maximum": 65535},
			"topologySpreadConstraints": list(freeObject()),
			"podDisruptionBudget": object(map[string]schema{
				"enabled":        typed("boolean", "null"),
				"minAvailable":   intOrPercent,
				"maxUnavailable": intOrPercent,
			}),
		}),
		"agent": workload(aflags, map[string]schema{
			"runtimeHook":         {"type": "string", "enum": []any{"nri", "reconciler", "off"}},
			"nriHostDir":          typed("string"),
			"stateDir":            typed("string"),
			"resctrl":             typed("boolean"),
			"hostPID":             typed("boolean"),
			"networkQOS":          typed("boolean"),
			"maxUnavailable":      typed("string", "integer"),
			"withoutCapabilities": list(schema{"type": "string", "enum": []any{"KILL", "SYS_RESOURCE", "DAC_OVERRIDE", "NET_ADMIN"}}),
		}),
		"sizing": object(map[string]schema{
			"manager": {"type": "object", "additionalProperties": row},
			"agent":   {"type": "object", "additionalProperties": row},
		}),
	})
	root["$schema"] = "https://json-schema.org/draft-07/schema#"
	root["title"] = "Values of the gleaner chart (generated by `make generate` from internal/chart; do not edit)"
	return marshal(root)
}

// marshal writes s with sorted keys (encoding/json sorts map keys) and two-space indentation.
func marshal(s schema) ([]byte, error) {
	out, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
