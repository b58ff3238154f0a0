package prediction

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	slov1alpha1 "github.com/gleaner-sh/gleaner/api/slo/v1alpha1"
	"github.com/gleaner-sh/gleaner/pkg/agent/metriccache"
	"github.com/gleaner-sh/gleaner/pkg/agent/prediction/checkpoint"
	"github.com/gleaner-sh/gleaner/pkg/agent/statesinformer"
)

// Name is the Server's name as a Runnable.
const Name = "peak-prediction"

// The names of the band models, as models and as checkpoint files; pod models are named by pod UID.
const (
	prodModel   = "prod"
	systemModel = "system"
)

// Options configure a Server.
type Options struct {
	// TrainingInterval is how often the models learn the samples the collectors took since the last round.
	TrainingInterval time.Duration
	// ModelExpiry is how long a pod may be gone (not a prod pod in the states) before its model is dropped. A pod
	// that comes back keeps its model: the states lose a pod briefly on a relist or an agent restart, but a deleted
	// pod never comes back (a new pod gets a new UID), so a longer expiry only keeps memory.
	ModelExpiry time.Duration
	// ColdStart is how old a model must be before its peak counts: a younger pod model reclaims nothing, and while
	// the prod band or system model is younger the node reclaims nothing.
	ColdStart time.Duration
	// SafetyMarginPercent raises every predicted peak before it is subtracted from requests.
	SafetyMarginPercent int64
	// CheckpointDir is the directory the models are saved to and loaded from; "" keeps them in memory only.
	CheckpointDir string
	// CheckpointInterval is how often the models are saved (and once more when the server stops).
	CheckpointInterval time.Duration
	// CheckpointMaxBytes bounds the size of the checkpoint directory.
	CheckpointMaxBytes int64
}

// DefaultOptions returns the defaults: train every minute; drop a gone pod's model after 30 minutes; a day of cold
// start, so that a model has seen a whole daily cycle before its peak counts (its recent-day peak covers 25 hours,
// see model.peak); a 10 % margin; checkpoints every 10 minutes (a crash loses at most 10 minutes of a
// day-long history) bounded to 64 MiB (maxModels models of at most about 7.5 KiB take about 7.5 MiB).
func DefaultOptions() Options {
	return Options{
		TrainingInterval:    time.Minute,
		ModelExpiry:         30 * time.Minute,
		ColdStart:           24 * time.Hour,
		SafetyMarginPercent: 10,
		CheckpointInterval:  10 * time.Minute,
		CheckpointMaxBytes:  64 << 20,
	}
}

// Validate reports every invalid field.
func (o Options) Validate() error {
	var errs []error
	if o.TrainingInterval <= 0 {
		errs = append(errs, fmt.Errorf("prediction training interval %s must be positive", o.TrainingInterval))
	}
	if o.ModelExpiry < o.TrainingInterval {
		errs = append(errs, fmt.Errorf("prediction model expiry %s must be at least the training interval %s", o.ModelExpiry, o.TrainingInterval))
	}
	if o.ColdStart < 0 {
		errs = append(errs, fmt.Errorf("prediction cold start %s must not be negative", o.ColdStart))
	}
	if o.SafetyMarginPercent < 0 || o.SafetyMarginPercent > 1000 {
		errs = append(errs, fmt.Errorf("prediction safety margin %d%% must be between 0 and 1000", o.SafetyMarginPercent))
	}
	if o.CheckpointDir != "" {
		if o.CheckpointInterval <= 0 {
			errs = append(errs, fmt.Errorf("prediction checkpoint interval %s must be positive", o.CheckpointInterval))
		}
		if o.CheckpointMaxBytes <= 0 {
			errs = append(errs, fmt.Errorf("prediction checkpoint size bound %d must be positive", o.CheckpointMaxBytes))
		}
	}
	return errors.Join(errs...)
}

// Prediction is what the server predicts for the node at one time.
type Prediction struct {
	// Reclaimable is the smaller of PodReclaimable and PriorityReclaimable: what the node reports.
	Reclaimable Resources
	// PodReclaimable is, over the warm prod pods, what each requests above its peak with the margin.
	PodReclaimable Resources
	// PriorityReclaimable is ProdRequest less the prod band's and the system's peaks with the margin.
	PriorityReclaimable Resources
	// ProdRequest is the prod pods' requests, as the scheduler counts them.
	ProdRequest Resources
	// ProdPeak is the prod band model's predicted peak (model.peak), SystemPeak the system model's p95 CPU / p98
	// memory (model.typicalPeak); margin not applied.
	ProdPeak, SystemPeak Resources
	// Warm says the prod band and system models are older than ColdStart.
	Warm bool
	// ColdPods is the number of prod pods whose model is younger than ColdStart, or that have none.
	ColdPods int
	// Since is when the prod band model started; zero if there is none.
	Since time.Time
}

// Server trains the peak-prediction models from the metric cache and predicts what the prod pods will not use. It
// is a Runnable; its methods are safe for concurrent use.
type Server struct {
	states statesinformer.States
	cache  metriccache.Cache
	clock  clock.WithTicker
	opts   Options
	store  *checkpoint.Store // nil without a checkpoint directory

	mu     sync.Mutex
	log    klog.Logger
	models map[string]*model
	// trainedUntil is the end of the last training window, so that a round never learns a sample twice.
	trainedUntil time.Time
	// capLogged says the maxModels refusal was logged.
	capLogged bool
	// buf is reused for the samples of one query.
	buf []float64
}

// NewServer returns a server with no models; Start loads the checkpoints. It opens (creating) the checkpoint
// directory when opts name one, so that a directory the agent cannot use fails at start-up with a clear error.
func NewServer(states statesinformer.States, cache metriccache.Cache, clk clock.WithTicker, opts Options) (*Server, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("configuring peak prediction: %w", err)
	}
	s := &Server{states: states, cache: cache, clock: clk, opts: opts, log: klog.Background().WithName(Name), models: map[string]*model{}}
	if opts.CheckpointDir != "" {
		store, err := checkpoint.Open(opts.CheckpointDir, opts.CheckpointMaxBytes)
		if err != nil {
			return nil, fmt.Errorf("opening peak prediction checkpoints: %w", err)
		}
		s.store = store
	}
	return s, nil
}

// Name implements the agent's Runnable.
func (s *Server) Name() string { return Name }

// Start loads the checkpoints, then trains every TrainingInterval and checkpoints every CheckpointInterval until ctx
// ends, when it checkpoints once more. A checkpoint file that cannot be read is logged and skipped (that model starts
// cold); a failed checkpoint is logged and retried at the next interval. It returns nil.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	s.log = klog.FromContext(ctx).WithName(Name)
	s.mu.Unlock()
	s.load()
	train := s.clock.NewTicker(s.opts.TrainingInterval)
	defer train.Stop()
	var save <-chan time.Time
	if s.store != nil {
		t := s.clock.NewTicker(s.opts.CheckpointInterval)
		defer t.Stop()
		save = t.C()
	}
	for {
		select {
		case <-ctx.Done():
			if s.store != nil {
				if err := s.Checkpoint(); err != nil {
					s.logger().Error(err, "Final checkpoint of the peak prediction models")
				}
			}
			return nil
		case now := <-train.C():
			s.Train(now)
		case <-save:
			if err := s.Checkpoint(); err != nil {
				s.logger().Error(err, "Checkpointing the peak prediction models")
			}
		}
	}
}

func (s *Server) logger() klog.Logger {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log
}

// load restores the models from the checkpoint directory, logging and skipping every file it cannot read.
func (s *Server) load() {
	if s.store == nil {
		return
	}
	payloads, errs := s.store.LoadAll()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, err := range errs {
		s.log.Error(err, "Skipping a peak prediction checkpoint; its model starts cold")
	}
	for name, p := range payloads {
		m, err := unmarshalModel(p)
		if err != nil {
			s.log.Error(err, "Skipping a peak prediction checkpoint; its model starts cold", "model", name)
			continue
		}
		if s.admit(name) {
			s.models[name] = m
		}
	}
	s.log.Info("Loaded peak prediction checkpoints", "models", len(s.models), "skipped", len(payloads)+len(errs)-len(s.models))
}

// admit says whether a model named name may be added, logging the first refusal. Band models are always admitted.
func (s *Server) admit(name string) bool {
	pods := len(s.models)
	for _, band := range []string{prodModel, systemModel} {
		if _, ok := s.models[band]; ok {
			pods--
		}
	}
	if name == prodModel || name == systemModel || pods < maxModels {
		return true
	}
	if !s.capLogged {
		s.capLogged = true
		s.log.Info("Too many peak prediction models; further pods stay cold", "max", maxModels)
	}
	return false
}

// Train runs one training round at now: every prod pod's CPU and memory samples since the last round (at most one
// TrainingInterval back) go into its model one by one, at the collectors' resolution, so that the hourly peaks and
// the percentiles describe the usage as sampled rather than minute averages, which would hide short peaks. The prod
// band model gets the per-sample sum of the prod pods, the system model the system part's samples. Models of pods
// gone longer than ModelExpiry are dropped.
func (s *Server) Train(now time.Time) {
	now = now.Round(0)
	s.mu.Lock()
	defer s.mu.Unlock()
	start := now.Add(-s.opts.TrainingInterval)
	if s.trainedUntil.After(start) {
		start = s.trainedUntil
	}
	if !now.After(start) {
		return
	}
	s.trainedUntil = now

	var band bandSum
	for _, pm := range s.states.GetAllPods() {
		if pm.Priority != slov1alpha1.PriorityProd {
			continue
		}
		uid := string(pm.Pod.UID)
		cpu, cpuOK := s.cache.Query(metriccache.PodKey(metriccache.PodCPUUsage, uid), start, now)
		mem, memOK := s.cache.Query(metriccache.PodKey(metriccache.PodMemoryUsage, uid), start, now)
		m := s.models[uid]
		if m != nil {
			m.lastSeen = now
		}
		if !cpuOK && !memOK {
			continue
		}
		if m == nil {
			if !s.admit(uid) {
				continue
			}
			m = newModel(now)
			s.models[uid] = m
		}
		if cpuOK {
			band.cpu.add(&cpu)
			s.buf = cpu.Values(s.buf[:0])
			m.learnCPU(s.buf, now)
		}
		if memOK {
			band.mem.add(&mem)
			s.buf = mem.Values(s.buf[:0])
			m.learnMem(s.buf, now)
		}
	}
	s.learnBand(prodModel, band.cpu.sums, band.mem.sums, now)

	var sysCPU, sysMem []float64
	if r, ok := s.cache.Query(metriccache.NodeKey(metriccache.SystemCPUUsage), start, now); ok {
		sysCPU = r.Values(nil)
	}
	if r, ok := s.cache.Query(metriccache.NodeKey(metriccache.SystemMemoryUsage), start, now); ok {
		sysMem = r.Values(nil)
	}
	s.learnBand(systemModel, sysCPU, sysMem, now)

	for name, m := range s.models {
		if name != prodModel && name != systemModel && now.Sub(m.lastSeen) > s.opts.ModelExpiry {
			delete(s.models, name)
		}
	}
}

func (s *Server) learnBand(name string, cpu, mem []float64, now time.Time) {
	if len(cpu) == 0 && len(mem) == 0 {
		return
	}
	m := s.models[name]
	if m == nil {
		m = newModel(now)
		s.models[name] = m
	}
	m.lastSeen = now
	m.learnCPU(cpu, now)
	m.learnMem(mem, now)
}

// bandSum is the per-sample sum of the prod pods' series of one metric in one window.
type bandSum struct{ cpu, mem seriesSum }

// seriesSum sums series sample by sample, aligned on each series' newest sample: the pod collector samples every
// pod in the same rounds, so the series share their buckets; a pod that started within the window has fewer samples
// and adds to the newest ones.
type seriesSum struct {
	sums []float64
	last time.Time
	step time.Duration
	vals []float64
}

func (b *seriesSum) add(r *metriccache.Result) {
	b.vals = r.Values(b.vals[:0])
	// Shift by the buckets between this series' newest sample and the newest seen so far.
	switch {
	case b.sums == nil:
		b.last, b.step = r.Last, r.Resolution
	case r.Last.After(b.last):
		shift := int(r.Last.Sub(b.last) / b.step)
		b.sums = append(b.sums, make([]float64, shift)...)
		b.last = r.Last
	}
	lag := 0
	if b.step > 0 {
		lag = int(b.last.Sub(r.Last) / b.step)
	}
	if n := len(b.vals) + lag; n > len(b.sums) {
		b.sums = append(make([]float64, n-len(b.sums)), b.sums...)
	}
	off := len(b.sums) - lag - len(b.vals)
	for i, v := range b.vals {
		b.sums[off+i] += v
	}
}

// Checkpoint saves every model to the checkpoint directory and removes the files of models that no longer exist. It
// goes on past a model it cannot save (the store full, a write error) and returns those errors joined. Without a
// checkpoint directory it does nothing.
func (s *Server) Checkpoint() error {
	if s.store == nil {
		return nil
	}
	s.mu.Lock()
	payloads := make(map[string][]byte, len(s.models))
	for name, m := range s.models {
		payloads[name] = m.marshal()
	}
	s.mu.Unlock()
	var errs []error
	// The band models first: they decide whether the node is warm.
	for _, name := range []string{prodModel, systemModel} {
		if p, ok := payloads[name]; ok {
			errs = append(errs, s.store.Save(name, p))
			delete(payloads, name)
		}
	}
	for name, p := range payloads {
		errs = append(errs, s.store.Save(name, p))
	}
	_, err := s.store.Prune(func(name string) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		_, ok := s.models[name]
		return ok
	})
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("checkpointing peak prediction models: %w", err)
	}
	return nil
}

// Prediction predicts at now from the prod pods in the states and the models.
func (s *Server) Prediction(now time.Time) Prediction {
	pods := s.states.GetAllPods()
	s.mu.Lock()
	defer s.mu.Unlock()
	var p Prediction
	terms := make([]PodTerm, 0, len(pods))
	var recent bandSum
	for _, pm := range pods {
		if pm.Priority != slov1alpha1.PriorityProd {
			continue
		}
		req := podRequest(pm.Pod)
		p.ProdRequest = p.ProdRequest.Add(req)
		uid := string(pm.Pod.UID)
		m := s.models[uid]
		warm := m.warm(now, s.opts.ColdStart)
		if !warm {
			p.ColdPods++
		}
		terms = append(terms, PodTerm{Request: req, Peak: m.peak(now).Max(s.untrainedPeak(uid, now, &recent)), Warm: warm})
	}
	prod, sys := s.models[prodModel], s.models[systemModel]
	// The prod band gets the peak a service may reach again; the system part (kubelet, the runtime, the node's own
	// daemons) its typical level. Its spikes are short and not lent out (an image pull or a build on the node is the
	// largest sample of a day, and reserving it would withhold the whole mid tier for a day); the safety margin
	// stands for them. The system part's histograms are the v1 prediction's, so this term is as before.
	p.ProdPeak, p.SystemPeak = prod.peak(now), sys.typicalPeak()
	if prod != nil {
		p.ProdPeak = p.ProdPeak.Max(Resources{MilliCPU: milliCores(largest(recent.cpu.sums)), MemoryBytes: wholeBytes(largest(recent.mem.sums))})
	}
	p.Warm = prod.warm(now, s.opts.ColdStart) && sys.warm(now, s.opts.ColdStart)
	if prod != nil {
		p.Since = prod.created
	}
	p.PodReclaimable = PodReclaimable(terms, s.opts.SafetyMarginPercent)
	p.PriorityReclaimable = PriorityReclaimable(p.ProdRequest, p.SystemPeak, p.ProdPeak, p.Warm, s.opts.SafetyMarginPercent)
	p.Reclaimable = Reclaimable(p.PodReclaimable, p.PriorityReclaimable)
	return p
}

// untrainedPeak is the largest CPU and memory sample of pod uid that no training round has read yet (those after
// the last round, at most one TrainingInterval), and adds them to band. A prediction covers them too: between two
// rounds a rise above the predicted peak is never reclaimable, not even until the next round.
func (s *Server) untrainedPeak(uid string, now time.Time, band *bandSum) Resources {
	if !now.After(s.trainedUntil) {
		return Resources{}
	}
	var peak Resources
	if r, ok := s.cache.Query(metriccache.PodKey(metriccache.PodCPUUsage, uid), s.trainedUntil, now); ok {
		band.cpu.add(&r)
		s.buf = r.Values(s.buf[:0])
		peak.MilliCPU = milliCores(largest(s.buf))
	}
	if r, ok := s.cache.Query(metriccache.PodKey(metriccache.PodMemoryUsage, uid), s.trainedUntil, now); ok {
		band.mem.add(&r)
		s.buf = r.Values(s.buf[:0])
		peak.MemoryBytes = wholeBytes(largest(s.buf))
	}
	return peak
}

// largest is the largest of vs that is a number, 0 for none.
func largest(vs []float64) float64 {
	top := 0.0
	for _, v := range vs {
		if !math.IsNaN(v) {
			top = max(top, v)
		}
	}
	return top
}

// milliCores and wholeBytes round a sample up to the units of Resources, as model.peak does.
func milliCores(cores float64) int64 { return int64(math.Ceil(cores * 1000)) }
func wholeBytes(b float64) int64     { return int64(math.Ceil(b)) }

// podRequest is a pod's CPU and memory requests as the scheduler counts them.
func podRequest(pod *corev1.Pod) Resources {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{UseStatusResources: true})
	return Resources{MilliCPU: reqs.Cpu().MilliValue(), MemoryBytes: reqs.Memory().Value()}
}

// modelNames returns the names of the models.
func (s *Server) modelNames() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.models))
	for name := range s.models {
		out[name] = true
	}
	return out
}
