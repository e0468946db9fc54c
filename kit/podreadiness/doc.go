// Package podreadiness maintains the KruisePodReady pod condition, the one
// readiness gate that several independent writers share to force a pod
// NotReady without touching its containers: lifecycle hooks with
// markPodNotReady (kit/lifecycle), ContainerRecreateRequest's unready grace,
// and others.
//
// # Wire format
//
// Each writer owns one or more Keys, {userAgent, key}. While any key is held
// the condition is
//
//	{type: KruisePodReady, status: "False",
//	 message: '[{"userAgent":"Lifecycle","key":"preDeleteHook"}]'}
//
// The message is a JSON array of objects with exactly the fields userAgent and
// key, sorted by userAgent then key, without duplicates. This is the shape
// OpenKruise writes and reads, so pods can move between OpenKruise and
// Flotilla (or be inspected by OpenKruise tooling) without losing a key. When
// the last key is removed the status becomes "True" and the message "[]" (an
// empty JSON array, again as OpenKruise writes it). A message that is not a
// JSON array (e.g. empty) is read as "no keys", as OpenKruise does.
//
// # The Ready condition
//
// A readiness gate only takes effect when the kubelet next recomputes the
// pod's Ready condition. To make Ready turn False in the same status write
// that adds a key (OpenKruise does the same), every change here also
// recomputes Ready kubelet-style (RecomputeReady): Ready is True iff
// ContainersReady is True and every spec.readinessGates condition is True.
//
// # Purity and writes
//
// AddNotReadyKey, RemoveNotReadyKey, Apply and RecomputeReady are pure: they
// never modify the pod they are given (pods straight from an informer cache
// are fine) and return a fresh conditions slice. Writer applies them to the
// API server through the pods/status subresource with optimistic concurrency,
// re-reading the pod and recomputing on conflict.
//
// Like OpenKruise, keys are only added to pods that declare the KruisePodReady
// readiness gate (on other pods the condition would not affect readiness, and
// OpenKruise does not write it there); removal works on any pod that carries
// the condition.
package podreadiness
