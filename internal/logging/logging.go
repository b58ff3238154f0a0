// Package logging is how gleaner-manager and gleaner-agent log: the flags the Kubernetes components take (-v for
// verbosity, --logging-format json or text) over controller-runtime's zap logger, with ISO 8601 timestamps. The zap
// flags the binaries took before (--zap-log-level, --zap-encoder, ...) still work for one release, deprecated; where
// one is given it wins over the new flag it overlaps.
package logging

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"go.uber.org/zap/zapcore"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// The values of --logging-format.
const (
	FormatJSON = "json"
	FormatText = "text"
)

// deprecation is what pflag prints when a zap flag is used.
const deprecation = "use -v and --logging-format instead; it goes in the next release"

// Options are the logging flags.
type Options struct {
	// Verbosity is -v: 0 logs what an operator needs, each step up adds detail (logr's V(n)).
	Verbosity int
	// Format is --logging-format: FormatJSON (one object a line) or FormatText (for a person at a terminal).
	Format string

	zap zap.Options
	fs  *pflag.FlagSet // where the flags were added, to see which zap flags were given
}

// NewOptions returns the defaults: verbosity 0, JSON.
func NewOptions() *Options { return &Options{Format: FormatJSON} }

// AddFlags adds -v, --logging-format and the deprecated zap flags to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.fs = fs
	fs.IntVarP(&o.Verbosity, "v", "v", o.Verbosity, "log verbosity: 0 logs what an operator needs, higher adds detail (as the Kubernetes components' -v)")
	fs.StringVar(&o.Format, "logging-format", o.Format, "log format: json (one object a line) or text")
	zapFlags := flag.NewFlagSet("zap", flag.ContinueOnError)
	o.zap.BindFlags(zapFlags)
	fs.AddGoFlagSet(zapFlags)
	zapFlags.VisitAll(func(f *flag.Flag) { _ = fs.MarkDeprecated(f.Name, deprecation) })
}

// Validate says what is wrong with the flags' values.
func (o *Options) Validate() error {
	if o.Verbosity < 0 || o.Verbosity > 127 {
		return fmt.Errorf("-v must be between 0 and 127, got %d", o.Verbosity)
	}
	if o.Format != FormatJSON && o.Format != FormatText {
		return fmt.Errorf("--logging-format must be %s or %s, got %q", FormatJSON, FormatText, o.Format)
	}
	return nil
}

// Logger returns the logger the flags ask for, writing to standard error.
func (o *Options) Logger() (logr.Logger, error) { return o.logger(os.Stderr) }

func (o *Options) logger(w io.Writer) (logr.Logger, error) {
	if err := o.Validate(); err != nil {
		return logr.Logger{}, err
	}
	given := func(name string) bool { return o.fs != nil && o.fs.Changed(name) }
	z := o.zap
	z.DestWriter = w
	devel := given("zap-devel") && z.Development // --zap-devel=false asks for nothing
	if !given("zap-log-level") && !devel {
		level := zapcore.Level(-o.Verbosity)
		z.Level = &level
	}
	if !given("zap-time-encoding") {
		z.TimeEncoder = zapcore.ISO8601TimeEncoder
	}
	var opts []zap.Opts
	opts = append(opts, zap.UseFlagOptions(&z))
	if !given("zap-encoder") && !devel {
		// The encoders' own configurations, with the time encoder that UseFlagOptions would otherwise add to the
		// default encoder only.
		at := func(c *zapcore.EncoderConfig) { c.EncodeTime = z.TimeEncoder }
		if o.Format == FormatText {
			opts = append(opts, zap.ConsoleEncoder(at))
		} else {
			opts = append(opts, zap.JSONEncoder(at))
		}
	}
	return zap.New(opts...), nil
}

// RouteKlog sends klog's output, client-go's included, to logger at -v: klog checks its own verbosity before it
// hands a klog.V(n) message on, so without this -v would reach logr's V(n) and not klog's.
func (o *Options) RouteKlog(logger logr.Logger) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	if err := fs.Set("v", strconv.Itoa(o.Verbosity)); err != nil {
		return fmt.Errorf("setting klog's -v: %w", err)
	}
	klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
	return nil
}
