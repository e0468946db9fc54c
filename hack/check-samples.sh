#!/usr/bin/env bash
# Waits until every sample of deploy/samples/ shows its documented state on the cluster of $KUBECONFIG and
# prints one line per sample; exits non-zero naming the first sample that does not get there in time.
# `make run` calls it after applying the samples (so CI, which runs `make run`, checks the quick start),
# and it can be run again by hand: hack/check-samples.sh [SECONDS per sample, default 120].
set -euo pipefail
source "$(dirname "$0")/lib.sh"
export KUBECONFIG=${KUBECONFIG:-${CLUSTER_DIR:-$ROOT/.cluster}/kubeconfig}
secs=${1:-120}
ns=default

# jp RESOURCE JSONPATH: one field of one object ("" when absent).
jp() { kubectl -n "$ns" get "$1" -o "jsonpath=$2" 2>/dev/null || true; }

# Each check prints what it saw and succeeds only in the documented state.
cloneset() { # 3 pods, all on the update revision and ready; the 20% budget rounds to 1
  local s; s=$(jp clonesets.apps.kruise.io/sample '{.status.replicas}/{.status.updatedReadyReplicas}/{.status.availableReplicas}')
  echo "replicas/updatedReady/available=$s"; [ "$s" = 3/3/3 ]
}
statefulset() { # 3 ordinal pods ready, one bound claim each
  local s pvcs; s=$(jp statefulsets.apps.kruise.io/sample-db '{.status.readyReplicas}/{.status.updatedReplicas}')
  pvcs=$(kubectl -n $ns get pvc -l app=sample-db -o 'jsonpath={range .items[?(@.status.phase=="Bound")]}{.metadata.name} {end}' 2>/dev/null | wc -w)
  echo "ready/updated=$s boundPVCs=$pvcs"; [ "$s" = 3/3 ] && [ "$pvcs" = 3 ]
}
daemonset() { # one ready pod on each kwok node
  local want s; want=$(kubectl get nodes -l type=kwok -o name | wc -l)
  s=$(jp daemonsets.apps.kruise.io/sample-agent '{.status.desiredNumberScheduled}/{.status.numberReady}/{.status.updatedNumberScheduled}')
  echo "kwokNodes=$want desired/ready/updated=$s"; [ "$want" -gt 0 ] && [ "$s" = "$want/$want/$want" ]
}
sidecarset() { # both Deployment pods carry the sidecars (log-agent, the hot-upgrade pair) and count as updated
  local s injected
  s=$(kubectl get sidecarsets.apps.kruise.io/sample -o 'jsonpath={.status.matchedPods}/{.status.updatedPods}/{.status.readyPods}' 2>/dev/null || true)
  injected=$(kubectl -n $ns get pods -l app=sidecar-sample \
    -o 'jsonpath={range .items[*]}{" "}{.spec.containers[*].name}{" \n"}{end}' 2>/dev/null |
    grep ' log-agent ' | grep ' nginx-sidecar-1 ' | grep -c ' nginx-sidecar-2 ' || true)
  echo "matched/updated/ready=$s podsInjected=$injected"; [ "$s" = 2/2/2 ] && [ "$injected" = 2 ]
}
pub() { # the CloneSet's 3 pods, 2 must stay available: one disruption allowed
  local s; s=$(jp podunavailablebudgets.policy.kruise.io/sample '{.status.totalReplicas}/{.status.desiredAvailable}/{.status.unavailableAllowed}')
  echo "total/desiredAvailable/unavailableAllowed=$s"; [ "$s" = 3/2/1 ]
}
podprobemarker() { # with a real node: the Deployment's two game-server pods matched, probed by probe-agent, marked idle;
  # kwok nodes only (make run REAL_NODES=0): no container runs, so nothing can probe — only reconciliation is shown.
  local s idle real
  s=$(jp podprobemarkers.apps.kruise.io/game-server-probe '{.metadata.generation}/{.status.observedGeneration}/{.status.matchedPods}')
  real=$(kubectl get nodes -l flotilla.dev/real-node=true -o name | wc -l)
  if [ "$real" = 0 ]; then
    echo "generation/observedGeneration/matchedPods=$s (no real node: no probe-agent runs, the game-server pods stay Pending; make run REAL_NODES=1)"
    [ -n "$s" ] && [ "${s%%/*}" = "$(cut -d/ -f2 <<<"$s")" ]; return
  fi
  idle=$(kubectl -n $ns get pods -l app=game-server,gameserver-idle=true -o name 2>/dev/null | wc -l)
  # The pods' phases (and reasons: Evicted when the real node is short of disk) make a failure readable.
  pods=$(kubectl -n $ns get pods -l app=game-server -o 'jsonpath={range .items[*]}{.status.phase}({.status.reason}){" "}{end}' 2>/dev/null | sed 's/()//g' || true)
  echo "generation/observedGeneration/matchedPods=$s podsMarkedIdle=$idle gameServers=[${pods% }]"
  # At least the Deployment's two (test/e2e/install adds a pod of its own that the marker also matches).
  [ "${s%%/*}" = "$(cut -d/ -f2 <<<"$s")" ] && [ "${s##*/}" -ge 2 ] 2>/dev/null && [ "$idle" = 2 ]
}
deletionprotection() { # both deletions refused (server-side dry runs), each with OpenKruise's reason: the namespace
  # has an active pod (deletionprotection-controller's webhook), the Deployment has replicas (the policy)
  local nsmsg deploymsg
  nsmsg=$(kubectl delete --dry-run=server namespace protected-sample 2>&1 | grep -o 'forbidden by ResourcesProtectionDeletion.*>0' || true)
  deploymsg=$(kubectl -n protected-sample delete --dry-run=server deployment protected 2>&1 | grep -o 'forbidden by ResourcesProtectionDeletion.*>0' || true)
  echo "delete namespace: ${nsmsg:-not refused}; delete deployment: ${deploymsg:-not refused}"
  [[ $nsmsg == *"delete-protection=Cascading and active pods"* ]] && [[ $deploymsg == *"delete-protection=Cascading and replicas 1>0"* ]]
}

uniteddeployment() { # 5 pods over two zones, one CloneSet per subset: 2 in zone-0 (40%), the rest (3) in zone-1, all
  # ready and updated (uniteddeployment-controller writes the CloneSets, cloneset-controller runs their pods)
  local s subsets
  s=$(jp uniteddeployments.apps.kruise.io/sample-ud '{.status.replicas}/{.status.readyReplicas}/{.status.updatedReadyReplicas}')
  subsets=$(kubectl -n $ns get clonesets.apps.kruise.io -l app=sample-ud,apps.kruise.io/subset-name -o \
    'jsonpath={range .items[*]}{.metadata.labels.apps\.kruise\.io/subset-name}={.status.readyReplicas}/{.spec.replicas}{"\n"}{end}' 2>/dev/null | sort | xargs || true)
  echo "replicas/ready/updatedReady=$s subsets(ready/desired)=[$subsets]"
  [ "$s" = 5/5/5 ] && [ "$subsets" = "zone-0=2/2 zone-1=3/3" ]
}

resourcedistribution() { # the ConfigMap game-demo copied into both labelled namespaces, each copy carrying the
  # source's hash (resourcedistribution-controller writes them), and the status counting 2 of 2
  local s copies
  s=$(kubectl get resourcedistributions.apps.kruise.io/sample -o 'jsonpath={.status.desired}/{.status.succeeded}/{.status.failed}' 2>/dev/null || true)
  [[ $s == */ ]] && s=${s}0 # status.failed is omitted when 0 (omitempty, as OpenKruise)
  copies=$(for n in game-a game-b; do kubectl -n $n get configmap game-demo \
    -o 'jsonpath={.metadata.namespace}:lives={.data.player_initial_lives},hash={.metadata.annotations.kruise\.io/resourcedistribution\.resource\.hashcode}' 2>/dev/null |
    sed -E 's/(hash=.{8}).*/\1…/'; echo; done | xargs || true)
  echo "desired/succeeded/failed=$s copies=[$copies]"
  [ "$s" = 2/2/0 ] && [ "$(grep -o 'lives=3,hash=[0-9a-f]' <<<"$copies" | wc -l)" = 2 ]
}

launchpriority() { # the Ordered pod's containers got their barrier keys (first p_0, second p_-1) and, with a real
  # node, started in order: second only once first was ready (start times from the kubelet, first ready after 3 s)
  local pod barriers keys real t1 t2
  pod=$(kubectl -n $ns get pods -l app=launch-priority-sample -o 'jsonpath={.items[0].metadata.name}' 2>/dev/null || true)
  [ -n "$pod" ] || { echo "no pod"; return 1; }
  barriers=$(jp "pod/$pod" '{range .spec.containers[*]}{.name}={.env[?(@.name=="KRUISE_CONTAINER_BARRIER")].valueFrom.configMapKeyRef.key} {end}')
  keys=$(jp "configmap/$pod-barrier" '{.data.p_0}/{.data.p_-1}')
  real=$(kubectl get nodes -l flotilla.dev/real-node=true -o name | wc -l)
  if [ "$real" = 0 ]; then
    echo "barriers=[${barriers% }] opened p_0/p_-1=$keys (no real node: the pod stays Pending; make run REAL_NODES=1)"
    [ "$barriers" = "first=p_0 second=p_-1 " ] && [ "${keys%%/*}" = true ]; return
  fi
  t1=$(jp "pod/$pod" '{.status.containerStatuses[?(@.name=="first")].state.running.startedAt}')
  t2=$(jp "pod/$pod" '{.status.containerStatuses[?(@.name=="second")].state.running.startedAt}')
  [ -n "$t1" ] && [ -n "$t2" ] || { echo "barriers=[${barriers% }] opened p_0/p_-1=$keys started first=$t1 second=$t2"; return 1; }
  echo "barriers=[${barriers% }] started first=$t1 second=$t2 (+$(( $(date -d "$t2" +%s) - $(date -d "$t1" +%s) ))s)"
  [ "$barriers" = "first=p_0 second=p_-1 " ] && [ "$keys" = true/true ] && [ $(( $(date -d "$t2" +%s) - $(date -d "$t1" +%s) )) -ge 2 ]
}

workloadspread() { # 6 pods of the Deployment placed by the webhook: 3 in zone-0 (subset fixed, its maxReplicas),
  # 3 in the elastic zone-1, and the status counting them
  local s pods
  s=$(jp workloadspreads.apps.kruise.io/sample '{range .status.subsetStatuses[*]}{.name}={.replicas}/{.missingReplicas} {end}')
  pods=$(kubectl -n $ns get pods -l app=workloadspread-sample -o \
    'jsonpath={range .items[*]}{.metadata.annotations.apps\.kruise\.io/matched-workloadspread}{"\n"}{end}' 2>/dev/null |
    grep -o '"subset":"[a-z]*"' | sort | uniq -c | awk '{gsub(/"subset":|"/,"",$2); printf "%s:%s ", $2, $1}' || true)
  echo "subsets(replicas/missing)=[${s% }] pods=[${pods% }]"
  [ "$s" = "fixed=3/0 elastic=3/-1 " ] && [ "$pods" = "elastic:3 fixed:3 " ]
}

containerrecreaterequest() { # with a real node: app recreated once (Succeeded, restartCount 1), the sidecar not;
  # without one: completed with OpenKruise's message for a pod on no node
  local s restarts real
  s=$(jp containerrecreaterequests.apps.kruise.io/sample '{.status.phase}:{.status.containerRecreateStates[*].phase}:{.status.message}')
  real=$(kubectl get nodes -l flotilla.dev/real-node=true -o name | wc -l)
  if [ "$real" = 0 ]; then
    echo "phase:states:message=$s (no real node: make run REAL_NODES=1)"
    [ "$s" = "Completed::not allowed to recreate containers in a pending Pod" ]; return
  fi
  restarts=$(jp pod/crr-sample '{range .status.containerStatuses[*]}{.name}={.restartCount} {end}')
  echo "phase:states:message=$s restarts=[${restarts% }]"
  [ "$s" = "Completed:Succeeded:" ] && [ "$restarts" = "app=1 sidecar=0 " ]
}

persistentpodstate() { # the StatefulSet's annotations generated pps-sample (controlled by it); both pods recorded with
  # their zone and hostname (persistentpodstate-controller); their names in its pod webhook's scope (WebhookInScope)
  local owner inscope recs
  owner=$(jp persistentpodstates.apps.kruise.io/pps-sample '{.metadata.ownerReferences[?(@.controller==true)].kind}/{.metadata.ownerReferences[?(@.controller==true)].name}')
  inscope=$(jp persistentpodstates.apps.kruise.io/pps-sample '{.status.conditions[?(@.type=="WebhookInScope")].status}')
  recs=$(kubectl -n $ns get persistentpodstates.apps.kruise.io/pps-sample -o go-template='{{range $p, $s := .status.podStates}}{{$p}}@{{index $s.nodeTopologyLabels "topology.kubernetes.io/zone"}},{{index $s.nodeTopologyLabels "kubernetes.io/hostname"}} {{end}}' 2>/dev/null || true)
  echo "owner=$owner webhookInScope=$inscope records=[${recs% }]"
  [ "$owner" = StatefulSet/pps-sample ] && [ "$inscope" = True ] &&
    [ "$(grep -oE 'pps-sample-[01]@zone-[0-9]+,kwok-node-[0-9]+' <<<"$recs" | wc -l)" = 2 ]
}

imagepulljob() { # the job chose the real nodes (none without one: completed at once); each real node's NodeImage
  # carries busybox:v2 for it and the node agent pulled it: the job counts every real node succeeded
  local real s tagged=0 n
  real=$(kubectl get nodes -l flotilla.dev/real-node=true -o name | wc -l)
  s=$(jp imagepulljobs.apps.kruise.io/sample-pull '{.status.desired}/{.status.succeeded}/{.status.failed}')
  for n in $(kubectl get nodes -l flotilla.dev/real-node=true -o 'jsonpath={.items[*].metadata.name}'); do
    kubectl get nodeimages.apps.kruise.io "$n" -o go-template='{{range (index .spec.images "127.0.0.1:5050/flotilla/busybox").tags}}{{.tag}} {{range .ownerReferences}}{{.name}}{{end}}{{"\n"}}{{end}}' 2>/dev/null |
      grep -qx 'v2 sample-pull' && tagged=$((tagged + 1))
  done
  echo "realNodes=$real desired/succeeded/failed=$s nodeImagesWithTag=$tagged"
  [ "$s" = "$real/$real/0" ]
}

declare -A file_of=([cloneset]=cloneset [statefulset]=statefulset [daemonset]=daemonset [sidecarset]=sidecarset
  [pub]=pub [podprobemarker]=podprobemarker [game-server]=podprobemarker [uniteddeployment]=uniteddeployment [deletionprotection]=deletionprotection
  [resourcedistribution]=resourcedistribution [launchpriority]=launchpriority [workloadspread]=workloadspread
  [containerrecreaterequest]=containerrecreaterequest [persistentpodstate]=persistentpodstate [imagepulljob]=imagepulljob)
for f in "$ROOT"/deploy/samples/*.yaml; do
  base=$(basename "$f" .yaml)
  [ -n "${file_of[$base]:-}" ] || { echo "check-samples: no check for deploy/samples/$base.yaml" >&2; exit 1; }
done
for sample in cloneset statefulset daemonset sidecarset pub podprobemarker uniteddeployment deletionprotection resourcedistribution launchpriority workloadspread containerrecreaterequest persistentpodstate imagepulljob; do
  deadline=$((SECONDS + secs))
  until seen=$($sample); do
    if [ $SECONDS -ge $deadline ]; then
      echo "sample $sample did not reach its documented state in ${secs}s: $seen" >&2
      exit 1
    fi
    sleep 0.5
  done
  printf '  %-24s ok  %s\n' "$sample" "$seen"
done
