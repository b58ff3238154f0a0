package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--version", "v0.1.0", "--platforms", "linux/amd64, linux/arm64", "--push", "127.0.0.1:5000/gleaner"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"amd64", "arm64"}, o.arches); diff != "" || o.version != "v0.1.0" || o.push != "127.0.0.1:5000/gleaner" || o.out != "bin/images" {
		t.Errorf("options %+v (arches -want +got:\n%s)", o, diff)
	}
	for args, want := range map[string]string{
		"--platforms linux/amd64":               "--version is required",
		"--version v1 --platforms darwin/arm64": `platform "darwin/arm64": images are for linux/ARCH`,
		"--version v1 --platforms linux/":       `platform "linux/"`,
		"--version v1 --platforms ,":            "no platforms",
		"--version v1 extra":                    "unexpected arguments",
		"--version v1 --no-such-flag":           "no-such-flag",
	} {
		if _, err := parseFlags(strings.Fields(args)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", args, err, want)
		}
	}
}
