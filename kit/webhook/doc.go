// Package webhook is the admission machinery every Flotilla webhook uses
// (SidecarSet pod injection first, PodUnavailableBudget next):
//
//   - Server: an AdmissionReview v1 server over TLS with handlers registered
//     per path, request decoding, JSON-patch responses and warnings, and
//     metrics (latency, allowed/denied/errors by handler) on the binary's
//     /metrics registry.
//   - Certificates: SecretCerts generates a CA and a serving certificate and
//     keeps them in one Secret, so every replica serves the same one
//     (create-or-get, conflicts resolved by re-reading), renewing them before
//     they expire; FileCerts serves externally provided certificates (e.g.
//     cert-manager) and reloads them when they change.
//   - Configurations: CABundleInjector writes the CA bundle into the binary's
//     own Mutating/ValidatingWebhookConfigurations (by name);
//     ScopeSyncer keeps one webhook's matchConditions (CEL) and selectors
//     equal to what a controller computes from existing objects, so the API
//     server calls the webhook only for objects some object could concern
//     (with none, a condition that is always false: no call at all).
//
// It serves on every replica (kit/app ReplicaComponent), not only the
// leader; Component bundles server, certificates and injector into one.
package webhook
