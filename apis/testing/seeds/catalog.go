package seeds

// Skipped lists every seed example that is out of scope, by ID, with the
// reason. Every other example must be of a kind this API serves; tests fail
// on an unclassified example (for instance after a seed document changed).
var Skipped = map[string]string{
	"000#2": "core/v1 Pod showing probe results; not a kind of this API",
	"000#5": "not valid YAML: documentation pseudo-syntax (patchPolicy outside its list item, `Overwrite | Retain`); a repaired copy is tested as 000#5-repaired",
	"000#6": "core/v1 Pod showing injected annotations; not a kind of this API",
	"003#2": "fragment of a ContainerRecreateRequest spec without apiVersion/kind; a repaired copy is tested as 003#2-repaired",
	"003#4": "core/v1 Pod showing a revision label; not a kind of this API",
	"004#4": "Go snippet (Lifecycle types), not a manifest",
	"004#5": "CRD subresources snippet, not an object",
	"004#6": "Go snippet (kubebuilder scale marker), not a manifest",

	// 001 (v1.1, Chinese) and 002 (the English release posts of v0.9–v1.3), found by parseFlat.
	"002#2":  "core/v1 Pod showing probe results; not a kind of this API",
	"002#6":  "core/v1 Pod showing injected annotations; not a kind of this API",
	"002#11": "CRD subresources snippet of a user's own workload, not an object",
	"002#17": "not valid YAML: documentation pseudo-syntax (`apps/v1 | apps.kruise.io/v1alpha1`, `Deployment | CloneSet`, `10 | 30%`); repaired copies are tested as 002#17-repaired (Deployment, 30%) and 002#17-repaired-cloneset (CloneSet, 10)",
	"002#23": "core/v1 Pod showing a revision label; not a kind of this API",
}

// Reindented holds, for each in-scope example of a flattened seed document,
// the example with its indentation restored; InScope checks that it keeps
// every line of the original but those its Changed explains. Where the
// example shows behaviour, the comment names the test that shows it (or the
// issue that will).
var Reindented = map[string]Reindent{
	// In-place update of env from metadata with container priority; the behaviour (a container restarted in
	// place for an env change) needs the node agent: issue 28. Image batches by priority: cloneset integration
	// TestInPlaceContainerPriorityBatches; with the barrier injected at creation (launchpriority-controller), on the
	// real kubelet: test/e2e/realnode TestContainerLaunchPriorityOnRealNode.
	"001#1":  {YAML: envFromMetadataPriority},
	"002#12": {YAML: envFromMetadataPriority},
	// PVC retention: statefulset integration TestClaimRetentionWhenScaled, TestClaimRetentionWhenDeleted.
	"001#2": {YAML: `apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
spec:
  persistentVolumeClaimRetentionPolicy:
    whenDeleted: Delete
    whenScaled: Retain
`, Changed: retainOrDelete},
	"002#13": {YAML: `apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
spec:
  persistentVolumeClaimRetentionPolicy:
    whenDeleted: Retain
    whenScaled: Delete
`, Changed: retainOrDelete},
	// preDelete by label: daemonset integration TestPreDeleteRecreateUpdate, TestPreDeleteScaleIn.
	"001#3":  {YAML: daemonSetPreDelete},
	"002#14": {YAML: daemonSetPreDelete},
	// The game-server marker: test/e2e/realnode TestGameServerScaleInOnRealNode.
	"002#1": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: PodProbeMarker
metadata:
  name: game-server-probe
  namespace: ns
spec:
  selector:
    matchLabels:
      app: game-server
  probes:
  - name: Idle
    containerName: game-server
    probe:
      exec:
        command: [/home/game/idle.sh]
      initialDelaySeconds: 10
      timeoutSeconds: 3
      periodSeconds: 10
      successThreshold: 1
      failureThreshold: 3
    markerPolicy:
    - state: Succeeded
      labels:
        gameserver-idle: 'true'
      annotations:
        controller.kubernetes.io/pod-deletion-cost: '-10'
    - state: Failed
      labels:
        gameserver-idle: 'false'
      annotations:
        controller.kubernetes.io/pod-deletion-cost: '10'
    podConditionType: game.io/idle
`, Changed: map[string]string{
		"exec: /home/game/idle.sh": "an exec probe takes a command list (as in the post's fenced copy, 004): exec.command",
	}},
	// Injection of a pinned revision (and 002#4, a custom version): sidecarset integration TestSeedCanaryRevisions.
	"002#3": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: sidecarset
spec:
  updateStrategy:
    partition: 90%
  injectionStrategy:
    revision:
      revisionName: <specific-controllerrevision-name>
`, Changed: map[string]string{
		"revisionName: <specific-controllerrevision-name>": "the post shows the field before its release; OpenKruise serves it as injectionStrategy.revision.revisionName",
	}},
	"002#4": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
metadata:
  name: sidecarset
  labels:
    apps.kruise.io/sidecarset-custom-version: version-2
spec:
  updateStrategy:
    partition: 90%
  injectionStrategy:
    revision:
      customVersion: version-1
`, Changed: map[string]string{
		"apps.kruise.io/sidecarset-custom-version: example/version-2": "a label value cannot hold '/' (the API server refuses it on any object); the copy drops the 'example/' prefix",
		"customVersion: example/version-1": "the post shows the field before its release; OpenKruise serves it as injectionStrategy.revision.customVersion " +
			"(and the version names a label value, which cannot hold '/')",
	}},
	// patchPodMetadata (the fenced copy is 000#5): sidecarset integration TestPatchPodMetadataInUpgrade.
	"002#5": {YAML: Repaired["000#5-repaired"], Changed: map[string]string{
		"patchPolicy: Overwrite | Retain": "pseudo-syntax for a choice of two policies; the copy takes Overwrite",
		"containers:":                     "the post elides the sidecars (containers: ...); the tests merge the copy onto a minimal SidecarSet",
	}},
	// Image pre-download parallelism: daemonset integration TestImagePreDownload, cloneset TestPreDownloadInput (the
	// ImagePullJobs; pulling them needs the node agent: issue 28).
	// ContainerRecreateRequest (issue 28): containerrecreaterequest integration, test/e2e/realnode TestContainerRecreate*.
	"002#20": {YAML: crrMinimal},
	// 002#21 elides the rest of the spec (`# ...`): the copy is 002#20's object with the strategy.
	"002#21": {YAML: crrWithStrategy},
	"002#7": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
metadata:
  annotations:
    apps.kruise.io/image-predownload-parallelism: "10"
`},
	"002#22": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
metadata:
  annotations:
    apps.kruise.io/image-predownload-parallelism: "5"
`},
	// PersistentPodState (and 004#1, its fenced copy): persistentpodstate integration TestSeedExample (004#1 and
	// 004#2 from the seed text, "[,other node labels]" resolved to no other label: generated from the annotations
	// equal to this spec, pods recorded, a recreated pod's zone required and host preferred with weight 100, on kwok
	// nodes labelled with failure-domain.beta.kubernetes.io/zone and hostnames) and TestRecreatedPodKeepsTopology.
	"002#8": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: PersistentPodState
metadata:
  name: echoserver
  namespace: echoserver
spec:
  targetRef:
    apiVersion: apps.kruise.io/v1beta1
    kind: StatefulSet
    name: echoserver
  requiredPersistentTopology:
    nodeTopologyKeys:
    - failure-domain.beta.kubernetes.io/zone[,other node labels]
  preferredPersistentTopology:
  - preference:
      nodeTopologyKeys:
      - kubernetes.io/hostname[,other node labels]
    weight: 100
`},
	// The PersistentPodState they ask for is generated: persistentpodstate integration
	// TestAutoGenerateAdvancedStatefulSet (these very values, keys taken literally) and TestSeedExample (004#2, the
	// fenced copy, placeholder resolved, on a StatefulSet of apps.kruise.io/v1alpha1 as written).
	"002#9": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: StatefulSet
metadata:
  annotations:
    kruise.io/auto-generate-persistent-pod-state: "true"
    kruise.io/preferred-persistent-topology: kubernetes.io/hostname[,other node labels]
    kruise.io/required-persistent-topology: failure-domain.beta.kubernetes.io/zone[,other node labels]
`},
	// Percentage partition with at least one pod updated: cloneset integration TestSeedPartitionPercentage.
	"002#10": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
spec:
  replicas: 8
  updateStrategy:
    partition: 90%
status:
  replicas: 8
  expectedUpdatedReplicas: 1
  updatedReplicas: 1
  updatedReadyReplicas: 1
`},
	// Env from metadata alone: refused in place until the node agent (issue 28) can restart the container.
	"002#15": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
spec:
  replicas: 1
  template:
    metadata:
      annotations:
        app-config: "... the real env value ..."
    spec:
      containers:
      - name: app
        env:
        - name: APP_CONFIG
          valueFrom:
            fieldRef:
              fieldPath: metadata.annotations['app-config']
  updateStrategy:
    type: InPlaceIfPossible
`},
	// A budget by targetRef: pub integration TestBudgetTargetRef.
	"002#18": {YAML: `apiVersion: policy.kruise.io/v1alpha1
kind: PodUnavailableBudget
metadata:
  name: web-server-pub
  namespace: web
spec:
  targetRef:
    apiVersion: apps.kruise.io/v1alpha1
    kind: CloneSet
    name: web-server
  maxUnavailable: 60%
`, Changed: map[string]string{
		"apiVersion: apps.kruise.io/v1alpha1":             "the post writes the budget's group as apps.kruise.io; PodUnavailableBudget is policy.kruise.io/v1alpha1 in every release",
		"apiVersion: apps/v1 | apps.kruise.io/v1alpha1":   "pseudo-syntax for a choice of workloads; the copy takes CloneSet",
		"kind: Deployment | CloneSet | StatefulSet | ...": "pseudo-syntax for a choice of workloads; the copy takes CloneSet",
	}},
	// Parallel scale-up limited by scaleStrategy.maxUnavailable: statefulset integration TestParallelScaleMaxUnavailable.
	"002#19": {YAML: `apiVersion: apps.kruise.io/v1beta1
kind: StatefulSet
spec:
  replicas: 100
  podManagementPolicy: Parallel
  scaleStrategy:
    maxUnavailable: 10%
`},
	// Hot upgrade: sidecarset integration TestHotUpgrade.
	"002#24": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
spec:
  containers:
  - name: nginx-sidecar
    image: nginx:1.18
    lifecycle:
      postStart:
        exec:
          command:
          - /bin/bash
          - -c
          - /usr/local/bin/nginx-agent migrate
    upgradeStrategy:
      upgradeType: HotUpgrade
      hotUpgradeEmptyImage: empty:1.0.0
`},
	// ResourceDistribution (v1.0): the post elides data and the selector ("..."); the copy fills them as
	// deploy/samples/resourcedistribution.yaml does. Behaviour: resourcedistribution integration
	// TestDistributeUpdateAndRetarget, and hack/check-samples.sh on the sample.
	"002#16": {YAML: `apiVersion: apps.kruise.io/v1alpha1
kind: ResourceDistribution
metadata:
  name: sample
spec:
  resource:
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: game-demo
    data:
      player_initial_lives: "3"
      ui_properties_file_name: user-interface.properties
  targets:
    namespaceLabelSelector:
      matchLabels:
        resourcedistribution-sample: game
`},
}

const envFromMetadataPriority = `apiVersion: apps.kruise.io/v1alpha1
kind: CloneSet
spec:
  replicas: 1
  template:
    metadata:
      annotations:
        app-config: "... config v1 ..."
    spec:
      containers:
      - name: sidecar
        env:
        - name: KRUISE_CONTAINER_PRIORITY
          value: "10"
        - name: APP_CONFIG
          valueFrom:
            fieldRef:
              fieldPath: metadata.annotations['app-config']
      - name: main
        image: main-image:v1
  updateStrategy:
    type: InPlaceIfPossible
`

const daemonSetPreDelete = `apiVersion: apps.kruise.io/v1alpha1
kind: DaemonSet
spec:
  lifecycle:
    preDelete:
      labelsHandler:
        example.io/block-deleting: "true"
`

const crrMinimal = `apiVersion: apps.kruise.io/v1alpha1
kind: ContainerRecreateRequest
metadata:
  namespace: pod-namespace
  name: xxx
spec:
  podName: pod-name
  containers:
  - name: app
  - name: sidecar
`

const crrWithStrategy = crrMinimal + `  strategy:
    failurePolicy: Fail
    orderedRecreate: false
    terminationGracePeriodSeconds: 30
    unreadyGracePeriodSeconds: 3
    minStartedSeconds: 10
  activeDeadlineSeconds: 300
  ttlSecondsAfterFinished: 1800
`

var retainOrDelete = map[string]string{
	"whenDeleted: Retain | Delete": "pseudo-syntax for a choice of two policies; the copy takes one of them",
	"whenScaled: Retain | Delete":  "pseudo-syntax for a choice of two policies; the copy takes one of them",
}

// Repaired holds hand-fixed copies of seed examples that are not valid
// YAML as written, so that the intent of the example is still covered.
var Repaired = map[string]string{
	// 003#2 (and 002#21) show only spec.strategy and the deadlines of a ContainerRecreateRequest: completed with
	// 003#1's object. Behaviour: containerrecreaterequest integration and test/e2e/realnode TestContainerRecreate*.
	"003#2-repaired": crrWithStrategy,
	// 002#17, the v0.10 WorkloadSpread example: one of each choice (a Deployment, 30%). Behaviour: workloadspread
	// integration TestDeploymentSpreadAndScaleIn (subsets by zone, maxReplicas, the elastic subset emptied first on
	// scale-in) and TestSeedExample; the sample deploy/samples/workloadspread.yaml.
	"002#17-repaired": seedWorkloadSpread,
	// 002#17, the other choice of each (a CloneSet, 10). Behaviour: workloadspread integration
	// TestSeedExampleCloneSet (at most 10 in subset-a, the rest in subset-b, subset-b's pods deleted first).
	"002#17-repaired-cloneset": seedWorkloadSpreadCloneSet,
	"000#5-repaired": `apiVersion: apps.kruise.io/v1alpha1
kind: SidecarSet
spec:
  patchPodMetadata:
  - annotations:
      oom-score: '{"log-agent": 1}'
      custom.example.com/sidecar-configuration: '{"command": "/home/admin/bin/start.sh", "log-level": "3"}'
    patchPolicy: MergePatchJson
  - annotations:
      apps.kruise.io/container-launch-priority: Ordered
    patchPolicy: Overwrite
`,
}

// InScope returns the examples that must be accepted, with the repaired
// copies appended (as examples with Object set), and fails on examples that
// are neither in scope nor listed in Skipped.
func InScope(all []Example) ([]Example, error) {
	var out []Example
	for _, e := range all {
		if _, ok := Skipped[e.ID()]; ok {
			continue
		}
		if e.Flattened {
			r, ok := Reindented[e.ID()]
			if !ok {
				return nil, fmtErr("%s (%s:%d) is a flattened example with neither a re-indented copy (Reindented) nor a skip reason", e.ID(), e.File, e.Line)
			}
			if bad := unfaithful(e.Raw, r); len(bad) > 0 {
				return nil, fmtErr("%s (%s:%d): the re-indented copy differs from the original: %v", e.ID(), e.File, e.Line, bad)
			}
			e.Raw = r.YAML
			finish(&e)
		}
		if e.ParseError != nil {
			return nil, fmtErr("%s (%s:%d) does not parse and has no skip reason: %v", e.ID(), e.File, e.Line, e.ParseError)
		}
		if g := e.Group(); g != "apps.kruise.io" && g != "policy.kruise.io" {
			return nil, fmtErr("%s (%s:%d) %s %s is unclassified: add a skip reason", e.ID(), e.File, e.Line, e.APIVersion, e.Kind)
		}
		out = append(out, e)
	}
	for _, id := range sortedKeys(Repaired) {
		e := Example{File: id, Index: 0, Lang: "yaml", Raw: Repaired[id], Cleaned: Repaired[id]}
		finish(&e)
		if e.ParseError != nil {
			return nil, e.ParseError
		}
		e.File = id
		out = append(out, e)
	}
	return out, nil
}

// seedWorkloadSpread is 002#17 with each pseudo-syntax choice resolved (apps/v1 Deployment, maxReplicas 30%).
const seedWorkloadSpread = `apiVersion: apps.kruise.io/v1alpha1
kind: WorkloadSpread
metadata:
  name: workloadspread-demo
spec:
  targetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: workload-xxx
  subsets:
  - name: subset-a
    requiredNodeSelectorTerm:
      matchExpressions:
      - key: topology.kubernetes.io/zone
        operator: In
        values:
        - zone-a
    maxReplicas: 30%
  - name: subset-b
    requiredNodeSelectorTerm:
      matchExpressions:
      - key: topology.kubernetes.io/zone
        operator: In
        values:
        - zone-b
`

// seedWorkloadSpreadCloneSet is 002#17 with the other choices (apps.kruise.io/v1alpha1 CloneSet, maxReplicas 10).
const seedWorkloadSpreadCloneSet = `apiVersion: apps.kruise.io/v1alpha1
kind: WorkloadSpread
metadata:
  name: workloadspread-demo
spec:
  targetRef:
    apiVersion: apps.kruise.io/v1alpha1
    kind: CloneSet
    name: workload-xxx
  subsets:
  - name: subset-a
    requiredNodeSelectorTerm:
      matchExpressions:
      - key: topology.kubernetes.io/zone
        operator: In
        values:
        - zone-a
    maxReplicas: 10
  - name: subset-b
    requiredNodeSelectorTerm:
      matchExpressions:
      - key: topology.kubernetes.io/zone
        operator: In
        values:
        - zone-b
`
