package pub

// Limits the CRDs enforce at admission (OpenAPI maximum, CEL) and the
// controllers enforce again in code, for objects stored before the CRDs
// carried them (an OpenKruise installation taken over). The kubebuilder
// markers cannot name these constants; apis' CRD tests check that the
// generated schemas use the same numbers.
const (
	// MaxReplicas is the largest spec.replicas of a CloneSet or an Advanced
	// StatefulSet. A controller caches every pod of its workloads (~4 KB
	// each, bench/RESULTS.md), so 100,000 pods of one workload already fill
	// the default 512 MiB memory limit of a Deployment, and no cluster that
	// Kubernetes tests (150,000 pods in all) can run much more.
	MaxReplicas = 100000

	// MaxWorkloadNameLength is the longest name of a CloneSet or an Advanced
	// StatefulSet. Its pods carry the label controller-revision-hash with the
	// revision name "<name>-<hash>", the hash up to 10 characters, and a
	// label value may have at most 63 characters: a longer name makes every
	// pod creation fail.
	MaxWorkloadNameLength = 52

	// MaxReservedOrdinals bounds the number of ordinals an Advanced
	// StatefulSet's spec.reserveOrdinals may reserve in all (the sum of its
	// ranges' widths, a single ordinal counting 1).
	MaxReservedOrdinals = 100000
)
