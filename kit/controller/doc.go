// Package controller is the queue-and-workers loop every Flotilla controller
// runs on, plus the event-to-key helpers that feed it.
//
// It exists so that each controller only writes its handlers (object → owner
// key) and its sync function (key → reconcile): the rate-limited typed queue,
// the delayed enqueue of objects replayed from an informer's initial list
// (OpenKruise PR #1026), panic recovery, contextual logging and clean shutdown
// live here once.
package controller
