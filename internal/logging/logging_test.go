package logging

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
)

// parse adds the flags to a fresh flag set, parses args and returns the options with what the logger wrote.
func parse(t *testing.T, args ...string) (*Options, *pflag.FlagSet) {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("gleaner-test", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return o, fs
}

// logLines logs "shown" at V(0), "detail" at V(2) and "noise" at V(3), and returns the output's lines.
func logLines(t *testing.T, o *Options) []string {
	t.Helper()
	var out bytes.Buffer
	logger, err := o.logger(&out)
	if err != nil {
		t.Fatal(err)
	}
	logger.Info("shown", "k", "v")
	logger.V(2).Info("detail")
	logger.V(3).Info("noise")
	return strings.Split(strings.TrimSpace(out.String()), "\n")
}

// TestDefaultsAreJSONWithISO8601Times: without flags each line is a JSON object whose ts is an ISO 8601 time (not
// zap's epoch float), and only V(0) is logged.
func TestDefaultsAreJSONWithISO8601Times(t *testing.T) {
	o, _ := parse(t)
	lines := logLines(t, o)
	if len(lines) != 1 {
		t.Fatalf("want the V(0) line only, got %q", lines)
	}
	var entry map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &entry); err != nil {
		t.Fatalf("not JSON: %q: %v", lines[0], err)
	}
	ts, ok := entry["ts"].(string)
	if !ok {
		t.Fatalf("ts is %T (%v), want an ISO 8601 string", entry["ts"], entry["ts"])
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", ts); err != nil {
		t.Errorf("ts %q is not ISO 8601: %v", ts, err)
	}
	if entry["msg"] != "shown" || entry["k"] != "v" {
		t.Errorf("entry %v, want msg shown and k v", entry)
	}
}

// TestVerbosityAndText: -v 2 adds V(1) and V(2), not V(3); --logging-format text writes lines a person reads.
func TestVerbosityAndText(t *testing.T) {
	o, _ := parse(t, "-v", "2", "--logging-format=text")
	lines := logLines(t, o)
	if len(lines) != 2 || !strings.Contains(lines[0], "shown") || !strings.Contains(lines[1], "detail") {
		t.Fatalf("want the V(0) and V(2) lines, got %q", lines)
	}
	if strings.HasPrefix(lines[0], "{") || !strings.Contains(lines[0], `{"k": "v"}`) {
		t.Errorf("not the text format: %q", lines[0])
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", strings.Fields(lines[0])[0]); err != nil {
		t.Errorf("the line does not start with an ISO 8601 time: %q", lines[0])
	}
}

// TestZapFlagsStillWork: the zap flags of the release before are deprecated, and win over the new ones they overlap.
func TestZapFlagsStillWork(t *testing.T) {
	o, fs := parse(t, "-v", "5", "--zap-log-level=info", "--zap-encoder=console")
	if f := fs.Lookup("zap-log-level"); f.Deprecated == "" {
		t.Error("--zap-log-level is not marked deprecated")
	}
	lines := logLines(t, o)
	if len(lines) != 1 || strings.HasPrefix(lines[0], "{") {
		t.Errorf("with --zap-log-level=info and --zap-encoder=console want one console line, got %q", lines)
	}
}

// TestBadValues: a format or verbosity out of range is refused with the flag's name, and no logger is made.
func TestBadValues(t *testing.T) {
	for args, want := range map[string]string{"--logging-format=yaml": "--logging-format", "-v=-1": "-v must be"} {
		o, _ := parse(t, args)
		if _, err := o.logger(&bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error naming %q, got %v", args, want, err)
		}
	}
}

// TestKlogFollowsV: klog's V(n), which client-go and some of Gleaner's packages log through, is on at -v n and
// reaches the logger; --zap-devel=false leaves -v and --logging-format in charge.
func TestKlogFollowsV(t *testing.T) {
	o, _ := parse(t, "-v", "3", "--zap-devel=false", "--logging-format=text")
	var out bytes.Buffer
	logger, err := o.logger(&out)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.RouteKlog(logger); err != nil {
		t.Fatal(err)
	}
	defer klog.ClearLogger()
	klog.V(3).Info("klog detail")
	klog.V(4).Info("klog noise")
	klog.Flush()
	got := out.String()
	if !strings.Contains(got, "klog detail") || strings.Contains(got, "klog noise") || strings.HasPrefix(got, "{") {
		t.Errorf("klog at -v 3 in text: want its V(3) line and not V(4), got:\n%s", got)
	}
}
