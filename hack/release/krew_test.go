package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	k8sversion "k8s.io/apimachinery/pkg/util/version"
	"sigs.k8s.io/yaml"
)

// krewIndexPlugin is the manifest as Krew reads it (sigs.k8s.io/krew/pkg/index: Plugin, PluginSpec, Platform), with
// the fields a release leaves out, so that a strict decode finds any field Krew does not know.
type krewIndexPlugin struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Version          string              `json:"version"`
		ShortDescription string              `json:"shortDescription"`
		Description      string              `json:"description"`
		Caveats          string              `json:"caveats"`
		Homepage         string              `json:"homepage"`
		Platforms        []krewIndexPlatform `json:"platforms"`
	} `json:"spec"`
}

type krewIndexPlatform struct {
	Selector *struct {
		MatchLabels      map[string]string `json:"matchLabels"`
		MatchExpressions []map[string]any  `json:"matchExpressions"`
	} `json:"selector"`
	URI    string              `json:"uri"`
	SHA256 string              `json:"sha256"`
	Files  []map[string]string `json:"files"`
	Bin    string              `json:"bin"`
}

var (
	krewSafeName = regexp.MustCompile(`^[\w-]+$`)
	krewSHA256   = regexp.MustCompile(`^[a-f0-9]{64}$`)
)

// krewProblems is what Krew would refuse in the manifest file manifestName: the rules of its index validation
// (internal/index/validation: ValidatePlugin, validatePlatform, validateSelector) and, for each platform, what
// `kubectl krew install --manifest --archive` needs of the archive its uri names, read from archives (file name
// to content): its sha256, and bin as an executable file in it.
func krewProblems(t *testing.T, manifestName string, manifest []byte, archives map[string][]byte) []string {
	t.Helper()
	var p krewIndexPlugin
	if err := yaml.UnmarshalStrict(manifest, &p); err != nil {
		return []string{fmt.Sprintf("not a Krew manifest: %v", err)}
	}
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if p.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" {
		add("apiVersion %q", p.APIVersion)
	}
	if p.Kind != "Plugin" {
		add("kind %q", p.Kind)
	}
	if name := strings.TrimSuffix(manifestName, ".yaml"); p.Metadata.Name != name || !krewSafeName.MatchString(name) {
		add("name %q in manifest %s", p.Metadata.Name, manifestName)
	}
	if p.Spec.ShortDescription == "" || strings.ContainsAny(p.Spec.ShortDescription, "\r\n") {
		add("shortDescription %q: empty or more than a line", p.Spec.ShortDescription)
	}
	// Krew's semver.Parse: a leading v, then apimachinery's SemVer.
	if _, err := k8sversion.ParseSemantic(p.Spec.Version); err != nil || !strings.HasPrefix(p.Spec.Version, "v") {
		add("version %q: not SemVer with a leading v (%v)", p.Spec.Version, err)
	}
	if len(p.Spec.Platforms) == 0 {
		add("no platforms")
	}
	var selectors []string
	for i, pl := range p.Spec.Platforms {
		problems = append(problems, krewPlatformProblems(t, i, pl, &selectors, archives)...)
	}
	return problems
}

// krewPlatformProblems is what Krew would refuse in the manifest's platform i; selected holds the os/arch pairs of
// the platforms before it, and gets this one's.
func krewPlatformProblems(t *testing.T, i int, pl krewIndexPlatform, selected *[]string, archives map[string][]byte) []string {
	t.Helper()
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if pl.URI == "" || !krewSHA256.MatchString(pl.SHA256) || pl.Bin == "" {
		add("platform %d: uri %q, sha256 %q, bin %q: each must be set, sha256 as 64 lowercase hex digits", i, pl.URI, pl.SHA256, pl.Bin)
	}
	if pl.Selector == nil || (len(pl.Selector.MatchLabels) == 0 && len(pl.Selector.MatchExpressions) == 0) {
		add("platform %d: no selector", i)
		return problems
	}
	for k := range pl.Selector.MatchLabels {
		if k != "os" && k != "arch" {
			add("platform %d: selector key %q (Krew supports os and arch)", i, k)
		}
	}
	sel := pl.Selector.MatchLabels["os"] + "/" + pl.Selector.MatchLabels["arch"]
	if slices.Contains(*selected, sel) {
		add("platform %d: %s is selected twice", i, sel)
	}
	*selected = append(*selected, sel)

	data, ok := archives[path.Base(pl.URI)]
	if !ok {
		add("platform %d: no archive %s", i, path.Base(pl.URI))
		return problems
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != pl.SHA256 {
		add("platform %d: sha256 %s, but %s has %x", i, pl.SHA256, path.Base(pl.URI), sum)
	}
	entries := readArchive(t, pl.URI, data)
	j := slices.IndexFunc(entries, func(e entry) bool { return e.Name == filepath.ToSlash(pl.Bin) })
	if j < 0 || entries[j].Mode&0o111 == 0 {
		add("platform %s: bin %s is not an executable file in %s", sel, pl.Bin, path.Base(pl.URI))
	}
	return problems
}

// TestKrewManifest: the manifest of archives made by writeArchive is one Krew takes, and each platform's sha256 is
// its archive's.
func TestKrewManifest(t *testing.T) {
	manifest, archives := testKrewRelease(t)
	if problems := krewProblems(t, krewManifest, manifest, archives); len(problems) > 0 {
		t.Errorf("Krew would refuse %s:\n%s\n%s", krewManifest, strings.Join(problems, "\n"), manifest)
	}
	var p plugin
	if err := yaml.UnmarshalStrict(manifest, &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Version != "v1.2.3" {
		t.Errorf("version %q, want v1.2.3", p.Spec.Version)
	}
	for _, pl := range p.Spec.Platforms {
		want := "https://example.com/releases/v1.2.3/kubectl-glean_v1.2.3_" + pl.Selector.MatchLabels["os"] + "_" + pl.Selector.MatchLabels["arch"]
		if !strings.HasPrefix(pl.URI, want+".") {
			t.Errorf("uri %q, want %s.tar.gz or .zip", pl.URI, want)
		}
	}
}

// TestKrewProblems: the check finds what Krew refuses.
func TestKrewProblems(t *testing.T) {
	manifest, archives := testKrewRelease(t)
	tests := []struct {
		name string
		edit func(p *plugin)
		want string
	}{
		{"version without v", func(p *plugin) { p.Spec.Version = "1.2.3" }, "version"},
		{"version not SemVer", func(p *plugin) { p.Spec.Version = "v1.2" }, "version"},
		{"another name", func(p *plugin) { p.Metadata.Name = "gleaner" }, "name"},
		{"two-line short description", func(p *plugin) { p.Spec.ShortDescription = "a\nb" }, "shortDescription"},
		{"no platforms", func(p *plugin) { p.Spec.Platforms = nil }, "no platforms"},
		{"selector key", func(p *plugin) { p.Spec.Platforms[0].Selector.MatchLabels["distro"] = "debian" }, `selector key "distro"`},
		{"platform twice", func(p *plugin) { p.Spec.Platforms[1].Selector = p.Spec.Platforms[0].Selector }, "selected twice"},
		{"uppercase sha256", func(p *plugin) { p.Spec.Platforms[0].SHA256 = strings.ToUpper(p.Spec.Platforms[0].SHA256) }, "sha256"},
		{"another archive's sha256", func(p *plugin) { p.Spec.Platforms[0].SHA256 = p.Spec.Platforms[1].SHA256 }, "sha256"},
		{"bin not in the archive", func(p *plugin) { p.Spec.Platforms[0].Bin = "bin/kubectl-glean" }, "bin bin/kubectl-glean"},
		{"bin not executable", func(p *plugin) { p.Spec.Platforms[0].Bin = "LICENSE" }, "bin LICENSE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p plugin
			if err := yaml.Unmarshal(manifest, &p); err != nil {
				t.Fatal(err)
			}
			tt.edit(&p)
			edited, err := marshalPlugin(p)
			if err != nil {
				t.Fatal(err)
			}
			problems := krewProblems(t, krewManifest, edited, archives)
			if !slices.ContainsFunc(problems, func(s string) bool { return strings.Contains(s, tt.want) }) {
				t.Errorf("problems %q, want one about %q", problems, tt.want)
			}
		})
	}
	if problems := krewProblems(t, "gleaner.yaml", manifest, archives); len(problems) == 0 {
		t.Error("a manifest named gleaner.yaml for the plugin glean: no problem found")
	}
	if problems := krewProblems(t, krewManifest, append(manifest, "spec2: {}\n"...), archives); len(problems) == 0 {
		t.Error("a manifest with a field Krew does not know: no problem found")
	}
}

// testKrewRelease is the manifest of archives of three platforms and the archives by name.
func testKrewRelease(t *testing.T) ([]byte, map[string][]byte) {
	t.Helper()
	archives := map[string][]byte{}
	var as []archive
	for _, p := range []platform{{"linux", "amd64"}, {"darwin", "arm64"}, {"windows", "amd64"}} {
		var b strings.Builder
		members := []member{{Name: binaryName(p), Mode: 0o755, Data: []byte("binary for " + p.String())}, testMembers[1]}
		if err := writeArchive(&b, p, members, zipEpoch); err != nil {
			t.Fatal(err)
		}
		a := archive{Platform: p, Name: archiveName("v1.2.3", p), Bin: binaryName(p)}
		sum := sha256.Sum256([]byte(b.String()))
		a.SHA256 = hex.EncodeToString(sum[:])
		archives[a.Name] = []byte(b.String())
		as = append(as, a)
	}
	manifest, err := marshalPlugin(krewPlugin("1.2.3", "https://example.com/releases/v1.2.3/", as))
	if err != nil {
		t.Fatal(err)
	}
	return manifest, archives
}
