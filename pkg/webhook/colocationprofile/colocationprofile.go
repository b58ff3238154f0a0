package colocationprofile

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/gleaner-sh/gleaner/api/config/v1alpha1"
)

// +kubebuilder:rbac:groups=config.gleaner.sh,resources=colocationprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,namespace=default,resources=events,verbs=create;patch

// Path is where the webhook is served; config/webhook/colocationprofile.yaml points the API server at it.
const Path = "/mutate-pod-colocation-profile"

// ReasonPodNotTranslated is the reason of the Warning event on a profile whose selected pod was left unchanged.
const ReasonPodNotTranslated = "PodNotTranslated"

// Results of the pods the webhook saw, the result label of gleaner_colocation_profile_pods_total.
const (
	// ResultApplied: the pod was made a batch pod.
	ResultApplied = "applied"
	// ResultNotSampled: a profile selected the pod but its probability left it out.
	ResultNotSampled = "not-sampled"
	// ResultUntranslatable: a profile selected the pod, which was admitted unchanged because it cannot be translated.
	ResultUntranslatable = "untranslatable"
	// ResultError: the webhook could not read what it needs (profiles, the namespace, the priority class); the pod
	// was admitted unchanged.
	ResultError = "error"
)

// Mutator is the mutating admission webhook of pod creation: the first ColocationProfile (by name) that selects a
// new pod makes it a batch pod (Translate). It never refuses a pod: a pod no profile selects, one the probability
// leaves out, one that cannot be translated and one the webhook cannot decide on are all admitted unchanged, the
// last two with an admission warning, a count in gleaner_colocation_profile_pods_total and (for a pod that cannot
// be translated) a Warning event on the profile.
type Mutator struct {
	reader client.Reader
	// apiReader reads from the API server, for what the cache does not have yet: a namespace created a moment
	// before its first pod, a priority class created with the profile. Nil: the cache's answer stands.
	apiReader client.Reader
	recorder  events.EventRecorder
	pods      *prometheus.CounterVec
}

var _ admission.Handler = &Mutator{}

// New returns a Mutator reading profiles, namespaces and priority classes through reader (the manager's cache),
// and a namespace or priority class reader does not have (yet) through apiReader (the API server; nil: none),
// recording events with recorder and counting pods in reg.
func New(reader, apiReader client.Reader, recorder events.EventRecorder, reg prometheus.Registerer) (*Mutator, error) {
	pods := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gleaner_colocation_profile_pods_total",
		Help: "Pods created that a ColocationProfile selected (or that the webhook could not decide on: profile \"\"), by result: applied, not-sampled, untranslatable (admitted unchanged), error (admitted unchanged).",
	}, []string{"profile", "result"})
	if err := reg.Register(pods); err != nil {
		return nil, fmt.Errorf("registering the colocation profile metrics: %w", err)
	}
	return &Mutator{reader: reader, apiReader: apiReader, recorder: recorder, pods: pods}, nil
}

// Register sets the webhook up in mgr: it starts the cache's informers for what the webhook reads (so that the
// manager's readiness waits for them) and serves the webhook on Path. Metrics go to reg.
func Register(ctx context.Context, mgr ctrl.Manager, reg prometheus.Registerer) error {
	for _, obj := range []client.Object{&configv1alpha1.ColocationProfile{}, &corev1.Namespace{}, &schedulingv1.PriorityClass{}} {
		if _, err := mgr.GetCache().GetInformer(ctx, obj); err != nil {
			return fmt.Errorf("watching %T for the colocation profile webhook: %w", obj, err)
		}
	}
	m, err := New(mgr.GetClient(), mgr.GetAPIReader(), mgr.GetEventRecorder("gleaner-manager"), reg)
	if err != nil {
		return err
	}
	mgr.GetWebhookServer().Register(Path, m.Webhook())
	return nil
}

// Webhook returns the mutator wrapped for a controller-runtime webhook server.
func (m *Mutator) Webhook() *admission.Webhook {
	return &admission.Webhook{Handler: m, RecoverPanic: ptr.To(true)}
}

// Handle implements admission.Handler.
func (m *Mutator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.Kind.Kind != "Pod" || req.SubResource != "" {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := json.Unmarshal(req.Object.Raw, pod); err != nil {
		// Not ours to refuse: the API server decoded it, and will validate it.
		return m.failOpen(ctx, req, fmt.Errorf("decoding the pod: %w", err))
	}
	profile, err := m.selecting(ctx, req.Namespace, pod)
	if err != nil {
		return m.failOpen(ctx, req, err)
	}
	if profile == nil {
		return admission.Allowed("")
	}
	key := pod.Name
	if key == "" {
		key = "uid:" + string(req.UID)
	}
	if !Sampled(profile.Name, req.Namespace, key, ptr.Deref(profile.Spec.Probability, configv1alpha1.DefaultProbability)) {
		m.count(req, profile.Name, ResultNotSampled)
		return admission.Allowed("")
	}
	pc, err := m.priorityClass(ctx, priorityClassName(profile.Spec))
	if err != nil {
		return m.failOpen(ctx, req, err)
	}
	mutated := pod.DeepCopy()
	if err := Translate(mutated, profile, pc); err != nil {
		return m.untranslatable(ctx, req, pod, profile, err)
	}
	m.count(req, profile.Name, ResultApplied)
	return admission.Patched("", patch(pod, mutated)...)
}

// selecting returns the first profile by name that selects pod in namespace, nil when none does. A profile whose
// selector does not parse selects nothing (the CRD's schema cannot check a selector's operators).
func (m *Mutator) selecting(ctx context.Context, namespace string, pod *corev1.Pod) (*configv1alpha1.ColocationProfile, error) {
	var list configv1alpha1.ColocationProfileList
	if err := m.reader.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing colocation profiles: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	slices.SortFunc(list.Items, func(a, b configv1alpha1.ColocationProfile) int { return strings.Compare(a.Name, b.Name) })
	var ns *corev1.Namespace
	for i := range list.Items {
		p := &list.Items[i]
		podSel, err := selector(p.Spec.Selector)
		if err != nil {
			log.FromContext(ctx).Error(err, "colocation profile has an invalid selector; it selects nothing", "profile", p.Name)
			continue
		}
		if !podSel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if p.Spec.NamespaceSelector != nil {
			nsSel, err := selector(p.Spec.NamespaceSelector)
			if err != nil {
				log.FromContext(ctx).Error(err, "colocation profile has an invalid namespaceSelector; it selects nothing", "profile", p.Name)
				continue
			}
			if ns == nil {
				ns = &corev1.Namespace{}
				if err := m.get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
					return nil, fmt.Errorf("reading namespace %q: %w", namespace, err)
				}
			}
			if !nsSel.Matches(labels.Set(ns.Labels)) {
				continue
			}
		}
		return p, nil
	}
	return nil, nil
}

// selector converts s; nil selects everything.
func selector(s *metav1.LabelSelector) (labels.Selector, error) {
	if s == nil {
		return labels.Everything(), nil
	}
	return metav1.LabelSelectorAsSelector(s)
}

// priorityClass returns the PriorityClass named name, nil when it does not exist.
func (m *Mutator) priorityClass(ctx context.Context, name string) (*schedulingv1.PriorityClass, error) {
	pc := &schedulingv1.PriorityClass{}
	err := m.get(ctx, types.NamespacedName{Name: name}, pc)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading priority class %q: %w", name, err)
	}
	return pc, nil
}

// get reads obj from the cache, and from the API server when the cache does not have it (yet).
func (m *Mutator) get(ctx context.Context, key types.NamespacedName, obj client.Object) error {
	err := m.reader.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && m.apiReader != nil {
		return m.apiReader.Get(ctx, key, obj)
	}
	return err
}

// untranslatable admits pod unchanged, with a warning to the client, a Warning event on the profile and a count.
func (m *Mutator) untranslatable(ctx context.Context, req admission.Request, pod *corev1.Pod, p *configv1alpha1.ColocationProfile, err error) admission.Response {
	msg := fmt.Sprintf("colocation profile %s selects pod %s but the pod was admitted unchanged: %v", p.Name, podName(req.Namespace, pod), err)
	log.FromContext(ctx).Info(msg)
	m.count(req, p.Name, ResultUntranslatable)
	if !ptr.Deref(req.DryRun, false) {
		m.recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonPodNotTranslated, "Admit", "%s", msg)
	}
	return admission.Allowed("").WithWarnings(msg)
}

// failOpen admits the pod unchanged when the webhook cannot decide, with a warning and a count: the webhook never
// blocks pod creation.
func (m *Mutator) failOpen(ctx context.Context, req admission.Request, err error) admission.Response {
	log.FromContext(ctx).Error(err, "colocation profile webhook admitted a pod unchanged", "namespace", req.Namespace, "name", req.Name)
	m.count(req, "", ResultError)
	return admission.Allowed("").WithWarnings(fmt.Sprintf("colocation profiles were not applied to this pod: %v", err))
}

// count counts a pod, unless the request is a dry run (the webhook declares sideEffects NoneOnDryRun).
func (m *Mutator) count(req admission.Request, profile, result string) {
	if ptr.Deref(req.DryRun, false) {
		return
	}
	m.pods.WithLabelValues(profile, result).Inc()
}

// podName names a pod in messages: namespace/name, or namespace/generateName* before the name is generated.
func podName(namespace string, pod *corev1.Pod) string {
	if pod.Name == "" {
		return namespace + "/" + pod.GenerateName + "*"
	}
	return namespace + "/" + pod.Name
}
