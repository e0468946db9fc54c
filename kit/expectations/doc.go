// Package expectations keeps a controller from acting on an informer cache that
// has not yet caught up with the controller's own writes.
//
// A sync reads only from listers. Right after it creates, deletes or updates an
// object, the cache still shows the old world for a while; a second sync in that
// window would, for example, create the same replica again. Each kind of
// expectation records "I wrote this, wait until the cache shows it":
//
//   - [Scale]: per owner key, the names of objects being created or deleted.
//     Expect before the request, Observe from the informer's add/delete event (or
//     when the request definitely failed); skip scaling while not Satisfied.
//   - [ResourceVersion]: per object UID, the resourceVersion a write returned.
//     Expect after the write, Observe every cached copy; while not Satisfied,
//     requeue after the returned wait instead of acting on the stale copy.
//   - [Update]: per owner key, a target revision and the pods updated to it
//     (in place). Observe pods from the cache; skip further updates while not
//     Satisfied. Expecting a different revision starts a new set.
//
// Every entry expires after a timeout ([DefaultTimeout], [WithTimeout]): a lost
// event delays an owner by at most that long instead of wedging it for ever
// (docs/architecture.md §3). Expired entries are dropped lazily, by Satisfied; Scale and
// Update report the moment it happens (ok with a non-zero unsatisfiedFor) so the
// caller can log it, and every type counts them ([Scale.TimedOut] and friends)
// for a metric, e.g. a prometheus.CounterFunc. The package holds no global
// state and registers no metrics itself.
//
// Entries are not garbage-collected in the background: call Delete when an
// owner (Scale, Update) or object (ResourceVersion) is deleted.
//
// All types are safe for concurrent use. Time comes from an injected
// [clock.PassiveClock] ([WithClock]); the default is the real clock.
package expectations
