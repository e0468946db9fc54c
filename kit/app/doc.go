// Package app is the binary shell every Flotilla controller runs in: flags,
// logging, metrics and health endpoints, leader election, informer start-up
// and the controllers' Run loops.
//
// It exists so that each controller binary's main is one line:
//
//	func main() { os.Exit(app.Main(myapp.Binary())) }
//
// A Binary names itself, lists the feature gates it uses, may add flags, and
// supplies a Setup function that, given an Env (clients, gates, logger,
// metrics), creates its informers and controllers and registers them with the
// Env. The shell starts the registered informers and controllers only once
// this replica holds the leader Lease (or immediately with
// --leader-elect=false), marks /readyz ready once every informer has synced,
// and exits non-zero when the Lease is lost so the Deployment restarts it.
// What must run on every replica, leader or not — an admission webhook —
// registers as replica informer factories and ReplicaComponents: started
// right after Setup, they also make up /readyz, so a standby is ready.
package app
