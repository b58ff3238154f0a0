// Package webhookcert keeps the serving certificate of gleaner-manager's admission webhooks when no cert-manager
// provides one: a self-signed CA and certificate in a Secret shared by the replicas, the files the webhook server
// reads, and the caBundle of the ValidatingWebhookConfiguration and the MutatingWebhookConfiguration
// (config/webhook). With --webhook-cert-secret="" it is not used and the certificate comes from --webhook-cert-dir
// (cert-manager, or the test API server).
//
// Why not an established rotator such as github.com/open-policy-agent/cert-controller (v0.16.0 builds against
// controller-runtime v0.24 and Kubernetes v0.36): its rotator reads time.Now, so renewal cannot be tested on a fake
// clock; it needs list and watch on Secrets in the namespace and on every ValidatingWebhookConfiguration of the
// cluster through a cache of its own, where this package gets and updates one named Secret and gets, updates and
// watches (by a field selector on the name) two named configurations; it updates a Secret that the manifests must
// create beforehand and expects it mounted as a volume (so a renewal waits for the kubelet to sync the volume, or
// restarts the pod), where this package creates the Secret and writes the files itself; and it replaces the CA
// outright, where this package keeps the previous CA in the bundle so that replicas still serving the old
// certificate stay trusted during a renewal. What switching would save (webhookcert.go, 500 lines with comments)
// does not pay for broader permissions and a weaker rotation.
package webhookcert
