// Package webhookcert keeps the serving certificate of gleaner-manager's admission webhook when no cert-manager
// provides one: a self-signed CA and certificate in a Secret shared by the replicas, the files the webhook server
// reads, and the caBundle of the ValidatingWebhookConfiguration (config/webhook). With --webhook-cert-secret=""
// it is not used and the certificate comes from --webhook-cert-dir (cert-manager, or the test API server).
package webhookcert
