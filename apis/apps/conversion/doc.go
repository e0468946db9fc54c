// Package conversion converts apps.kruise.io objects between the served
// versions v1alpha1 and v1beta1. It is what a CRD conversion webhook calls
// (kit/webhook's RegisterConversion takes Convert as its ConvertFunc).
//
// # Entry point
//
//	func Convert(obj *unstructured.Unstructured, toVersion string) error
//
// converts obj in place to toVersion and sets its apiVersion. toVersion is
// either a version ("v1beta1") or a group/version ("apps.kruise.io/v1beta1",
// as a ConversionReview's desiredAPIVersion). The object's kind selects the
// mapping; an object already at toVersion is left as it is. An error names
// the field it is about (or the kind/version it cannot handle) and is meant
// to be shown to the client whose request needed the conversion.
//
// # Which kinds need a conversion webhook
//
// NeedsWebhook(kind) tells. Two kinds have version-specific fields:
//
//   - DaemonSet: v1alpha1 annotation daemonset.kruise.io/progressive-create-pod: "true"
//     is v1beta1 spec.scaleStrategy.partitionedScaling: true; v1alpha1
//     status.daemonSetHash is v1beta1 status.updateRevision; v1alpha1
//     rollingUpdateType Surging (deprecated) does not exist in v1beta1 and
//     becomes Standard with the surge it meant spelled out (maxSurge, default
//     1; maxUnavailable, default 0).
//   - SidecarSet: v1alpha1 spec.namespace becomes v1beta1 spec.namespaceSelector
//     {matchLabels: {kubernetes.io/metadata.name: <namespace>}}; v1alpha1 label
//     apps.kruise.io/sidecarset-custom-version is v1beta1 spec.customVersion.
//
// These are OpenKruise v1.9's mappings. AdvancedCronJob, BroadcastJob,
// ImagePullJob, NodeImage and StatefulSet have identical schemas in both versions
// (their CRDs use conversion strategy None and a test in the apis module
// checks the schemas are equal); Convert only rewrites their apiVersion.
//
// # Lossless
//
// Every conversion round-trips: converting to the other version and back
// gives the object unchanged, for any object, in both directions. OpenKruise
// loses information in a few places (Surging becomes Standard; a namespace
// becomes a selector; an annotation value other than "true" or an empty
// scaleStrategy has no image). Here, whatever the target version cannot
// express is carried in one annotation of the converted object,
//
//	conversion.flotilla.dev/v1alpha1-fields  on a v1beta1 object
//	conversion.flotilla.dev/v1beta1-fields   on a v1alpha1 object
//
// holding, per mapping rule, the source's values of that rule's fields
// ("restore") and the values the conversion wrote ("when"). Converting back
// restores them only while the rule's fields still hold the "when" values;
// once a client of the other version changed them, its change wins and the
// stale annotation is dropped. The semantics of the converted object never
// depend on the annotation: it only makes the way back exact. Annotations
// under conversion.flotilla.dev/ belong to this package: one a client writes
// itself is replaced or removed.
//
// Consequences: no valid object is ever refused (a refusal in the v1beta1 ->
// v1alpha1 direction would fail every list of the kind, and with it the
// controller's informer); errors are returned only for malformed input, such
// as a spec that is not an object or an annotation that is not a string.
package conversion
