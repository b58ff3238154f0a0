package serving

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// How long answers of the API server are reused: a scraper comes back every 15-60 s, and without a cache every
// scrape of every agent would cost the API server two requests. The same times as controller-runtime's filter
// and the API server's own webhook authenticator and authorizer.
const (
	authenticatedTTL   = time.Minute
	unauthenticatedTTL = 10 * time.Second
	allowedTTL         = 5 * time.Minute
	deniedTTL          = 30 * time.Second
	// reviewTimeout bounds one TokenReview or SubjectAccessReview.
	reviewTimeout = 10 * time.Second
	// maxCached bounds each cache: a flood of made-up tokens must not grow the process without end.
	maxCached = 4096
)

// Protect wraps h so that only clients the API server at cfg authenticates (a bearer token, TokenReview) and
// authorizes for the request's method, lowercased, on the request's path (a nonResourceURL, SubjectAccessReview)
// reach it. This is what controller-runtime's filters.WithAuthenticationAndAuthorization does for kubebuilder
// projects; that filter builds on k8s.io/apiserver, which would make the agent's binary 30 MB larger, so the two
// reviews are asked here with client-go. The serving identity needs create on tokenreviews and
// subjectaccessreviews (config/rbac/metrics_auth_role.yaml); a scraper needs get on the path
// (config/rbac/metrics_reader_role.yaml).
func Protect(cfg *rest.Config, clk clock.PassiveClock, log logr.Logger, h http.Handler) (http.Handler, error) {
	if cfg == nil {
		return nil, errors.New("protecting the metrics endpoint: no API server configuration to authenticate and authorize against")
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("protecting the metrics endpoint: a client for %s: %w", cfg.Host, err)
	}
	filter, err := FilterProvider(clk)(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return filter(log, h)
}

// FilterProvider returns Protect in the form controller-runtime's metrics server takes (metricsserver.Options).
func FilterProvider(clk clock.PassiveClock) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
		authn, err := authenticationv1client.NewForConfigAndClient(cfg, httpClient)
		if err != nil {
			return nil, fmt.Errorf("protecting the metrics endpoint: a TokenReview client for %s: %w", cfg.Host, err)
		}
		authz, err := authorizationv1client.NewForConfigAndClient(cfg, httpClient)
		if err != nil {
			return nil, fmt.Errorf("protecting the metrics endpoint: a SubjectAccessReview client for %s: %w", cfg.Host, err)
		}
		g := &gate{
			tokens: authn.TokenReviews(), access: authz.SubjectAccessReviews(), clock: clk,
			users: newTTLCache[*authenticationv1.UserInfo](clk), decisions: newTTLCache[bool](clk),
		}
		return func(log logr.Logger, h http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { g.serve(log, h, w, req) }), nil
		}, nil
	}
}

// gate asks the API server who a request comes from and whether that user may have the path.
type gate struct {
	tokens    authenticationv1client.TokenReviewInterface
	access    authorizationv1client.SubjectAccessReviewInterface
	clock     clock.PassiveClock
	users     *ttlCache[*authenticationv1.UserInfo] // by the token's SHA-256; nil: not authenticated
	decisions *ttlCache[bool]                       // by user, groups, extra, verb and path
}

func (g *gate) serve(log logr.Logger, h http.Handler, w http.ResponseWriter, req *http.Request) {
	token, ok := bearerToken(req)
	if !ok {
		http.Error(w, "Unauthorized: send a Kubernetes bearer token", http.StatusUnauthorized)
		return
	}
	user, err := g.authenticate(req.Context(), token)
	if err != nil {
		log.Error(err, "authenticating a metrics request", "path", req.URL.Path)
		http.Error(w, "authentication failed: the API server could not be asked", http.StatusInternalServerError)
		return
	}
	if user == nil {
		http.Error(w, "Unauthorized: the API server does not accept the token", http.StatusUnauthorized)
		return
	}
	verb := strings.ToLower(req.Method)
	allowed, err := g.authorize(req.Context(), user, verb, req.URL.Path)
	if err != nil {
		log.Error(err, "authorizing a metrics request", "user", user.Username, "path", req.URL.Path)
		http.Error(w, "authorization failed: the API server could not be asked", http.StatusInternalServerError)
		return
	}
	if !allowed {
		http.Error(w, fmt.Sprintf("Forbidden: user %q may not %s %s (grant it with the ClusterRole gleaner-metrics-reader)", user.Username, verb, req.URL.Path), http.StatusForbidden)
		return
	}
	h.ServeHTTP(w, req)
}

// bearerToken is the token of an "Authorization: Bearer TOKEN" header.
func bearerToken(req *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(req.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "bearer") || token == "" {
		return "", false
	}
	return token, true
}

// authenticate returns the token's user, or nil when the API server does not accept the token.
func (g *gate) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	key := fmt.Sprintf("%x", sha256.Sum256([]byte(token)))
	if user, ok := g.users.get(key); ok {
		return user, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := g.tokens.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("asking the API server about a token (TokenReview): %w", err)
	}
	if !review.Status.Authenticated {
		g.users.put(key, nil, unauthenticatedTTL)
		return nil, nil
	}
	user := review.Status.User
	g.users.put(key, &user, authenticatedTTL)
	return &user, nil
}

// authorize reports whether user may do verb on the nonResourceURL path.
func (g *gate) authorize(ctx context.Context, user *authenticationv1.UserInfo, verb, path string) (bool, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: map[string]authorizationv1.ExtraValue{},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
	for k, v := range user.Extra {
		spec.Extra[k] = authorizationv1.ExtraValue(v)
	}
	key := fmt.Sprintf("%q %q %q %q %v %v", verb, path, user.Username, user.UID, user.Groups, user.Extra)
	if allowed, ok := g.decisions.get(key); ok {
		return allowed, nil
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	review, err := g.access.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking the API server whether %q may %s %s (SubjectAccessReview): %w", user.Username, verb, path, err)
	}
	allowed := review.Status.Allowed && !review.Status.Denied
	ttl := deniedTTL
	if allowed {
		ttl = allowedTTL
	}
	g.decisions.put(key, allowed, ttl)
	return allowed, nil
}

// ttlCache keeps values for a while, at most maxCached of them.
type ttlCache[V any] struct {
	clock   clock.PassiveClock
	mu      sync.Mutex
	entries map[string]ttlEntry[V]
}

type ttlEntry[V any] struct {
	value   V
	expires time.Time
}

func newTTLCache[V any](clk clock.PassiveClock) *ttlCache[V] {
	return &ttlCache[V]{clock: clk, entries: map[string]ttlEntry[V]{}}
}

func (c *ttlCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.clock.Now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// put stores value until ttl has passed. A full cache first drops what has expired, then, still full, everything:
// the next requests ask the API server again, which is slower but never wrong.
func (c *ttlCache[V]) put(key string, value V, ttl time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	if len(c.entries) >= maxCached {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCached {
			clear(c.entries)
		}
	}
	c.entries[key] = ttlEntry[V]{value: value, expires: now.Add(ttl)}
}
