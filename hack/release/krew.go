package main

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// The Krew plugin manifest (https://krew.sigs.k8s.io/docs/developer-guide/plugin-manifest/): the plugin's name is
// the manifest's file name without .yaml, and what follows `kubectl ` when it runs.
const (
	krewAPIVersion = "krew.googlecontainertools.github.com/v1alpha2"
	krewKind       = "Plugin"
	krewName       = "glean"
	krewManifest   = krewName + ".yaml"

	homepage         = "https://github.com/gleaner-sh/gleaner"
	shortDescription = "Show Gleaner's node allocation, batch capacity and usage"
	description      = `Shows what Gleaner, the colocation system, keeps per node: the allocation summary of
kubectl describe node for many nodes at once (kubectl glean nodes), the batch and mid
resources offered to batch work with every term of their calculation (kubectl glean
explain NODE), and measured usage next to requests (kubectl glean top nodes|pods).
`
)

// plugin is a Krew plugin manifest, the part of Krew's index.Plugin that a release fills.
type plugin struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Metadata   pluginMetadata `json:"metadata"`
	Spec       pluginSpec     `json:"spec"`
}

type pluginMetadata struct {
	Name string `json:"name"`
}

type pluginSpec struct {
	// Version is SemVer with a leading v, which Krew requires.
	Version          string           `json:"version"`
	Homepage         string           `json:"homepage"`
	ShortDescription string           `json:"shortDescription"`
	Description      string           `json:"description"`
	Platforms        []pluginPlatform `json:"platforms"`
}

// pluginPlatform is where Krew gets the plugin for the machines its selector matches. Without `files`, Krew
// installs everything in the archive (the binary and LICENSE) and links Bin onto the PATH.
type pluginPlatform struct {
	Selector pluginSelector `json:"selector"`
	URI      string         `json:"uri"`
	SHA256   string         `json:"sha256"`
	Bin      string         `json:"bin"`
}

type pluginSelector struct {
	MatchLabels map[string]string `json:"matchLabels"`
}

// archive is one platform's plugin archive of a release.
type archive struct {
	Platform platform
	Name     string // file name
	SHA256   string // hex
	Bin      string // the binary's path in the archive
}

// krewPlugin is the Krew manifest of the release of the archives, whose files are at baseURL/<archive name>.
func krewPlugin(chartVer, baseURL string, archives []archive) plugin {
	p := plugin{
		APIVersion: krewAPIVersion,
		Kind:       krewKind,
		Metadata:   pluginMetadata{Name: krewName},
		Spec: pluginSpec{
			Version:          "v" + chartVer,
			Homepage:         homepage,
			ShortDescription: shortDescription,
			Description:      description,
		},
	}
	for _, a := range archives {
		p.Spec.Platforms = append(p.Spec.Platforms, pluginPlatform{
			Selector: pluginSelector{MatchLabels: map[string]string{"os": a.Platform.OS, "arch": a.Platform.Arch}},
			URI:      strings.TrimSuffix(baseURL, "/") + "/" + a.Name,
			SHA256:   a.SHA256,
			Bin:      a.Bin,
		})
	}
	return p
}

// marshalPlugin is the manifest's YAML.
func marshalPlugin(p plugin) ([]byte, error) {
	out, err := yaml.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("writing the Krew manifest: %w", err)
	}
	return out, nil
}
