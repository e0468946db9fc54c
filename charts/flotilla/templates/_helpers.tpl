{{- /*
Helpers of the generated templates (charts/tools/gen puts calls to them at known paths of the objects deploy/overlays
render). Hand-written; every failure names the value to change.
*/ -}}

{{- /* flotilla.image (dict root section): [registry/]repository[:tag][@digest] of a values section. */ -}}
{{- define "flotilla.image" -}}
{{- $img := (index .root.Values .section).image -}}
{{- $tag := toString ($img.tag | default "") -}}
{{- $digest := toString ($img.digest | default "") -}}
{{- if not $img.repository -}}
{{- fail (printf "%s.image.repository: empty" .section) -}}
{{- end -}}
{{- if and (not $tag) (not $digest) -}}
{{- fail (printf "%s.image: needs a tag or a digest (%s.image.tag and %s.image.digest are both empty)" .section .section .section) -}}
{{- end -}}
{{- if and $digest (not (regexMatch "^sha256:[0-9a-f]{64}$" $digest)) -}}
{{- fail (printf "%s.image.digest: %q is not sha256:<64 hex digits>" .section $digest) -}}
{{- end -}}
{{- $repo := $img.repository -}}
{{- with .root.Values.image.registry }}{{ $repo = printf "%s/%s" (trimSuffix "/" .) $repo }}{{ end -}}
{{- $repo -}}{{- with $tag }}:{{ . }}{{ end -}}{{- with $digest }}@{{ . }}{{ end -}}
{{- end -}}

{{- /* flotilla.gates (dict root binary gates): the overlay's gates (gates) overridden and extended by the values'
featureGates that the binary knows, as "Name=bool,...". */ -}}
{{- define "flotilla.gates" -}}
{{- $known := get (include "flotilla.knownGates" . | fromYaml) .binary | default list -}}
{{- $names := list -}}
{{- $vals := dict -}}
{{- /* KruiseDaemon for the workload controllers whenever the chart installs the node agent (with probe), as
deploy/components/node-agent-gates does in deploy/overlays/all; featureGates still overrides it. */ -}}
{{- $agent := "" -}}
{{- if and .root.Values.probe.enabled (has .binary (list "cloneset-controller" "statefulset-controller" "daemonset-controller")) }}{{ $agent = "KruiseDaemon=true" }}{{ end -}}
{{- range $i, $src := list .gates $agent .root.Values.featureGates -}}
{{- range (splitList "," (toString $src)) -}}
{{- $kv := splitList "=" (trim .) -}}
{{- $name := trim (first $kv) -}}
{{- if and $name (or (eq $i 0) (has $name $known) (has $name (list "AllAlpha" "AllBeta"))) -}}
{{- if not (hasKey $vals $name) }}{{ $names = append $names $name }}{{ end -}}
{{- $_ := set $vals $name (trim (last $kv)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $out := list -}}
{{- range $names }}{{ $out = append $out (printf "%s=%s" . (get $vals .)) }}{{ end -}}
{{- join "," $out -}}
{{- end -}}

{{- /* flotilla.args (dict root section binary gates webhook): args appended to the overlay's, as a YAML list. */ -}}
{{- define "flotilla.args" -}}
{{- $args := list -}}
{{- with (include "flotilla.gates" .) }}{{ $args = append $args (printf "--feature-gates=%s" .) }}{{ end -}}
{{- $m := .root.Values.manager -}}
{{- $log := ternary (.root.Values.daemon.log | default dict) ($m.log | default dict) (eq .section "daemon") -}}
{{- with $log.level }}{{ $args = append $args (printf "--v=%v" .) }}{{ end -}}
{{- with $m.loggingFormat }}{{ $args = append $args (printf "--log-format=%s" .) }}{{ end -}}
{{- if ne .section "daemon" }}{{ with $m.resyncPeriod }}{{ $args = append $args (printf "--sync-period=%s" .) }}{{ end }}{{ end -}}
{{- if .webhook -}}
{{- $wh := (index .root.Values .section).webhook -}}
{{- if ne (int $wh.port) 9443 }}{{ $args = append $args (printf "--webhook-port=%d" (int $wh.port)) }}{{ end -}}
{{- if ne .root.Values.certificates.mode "self-managed" }}{{ $args = append $args "--webhook-cert-dir=/etc/flotilla/webhook-certs" }}{{ end -}}
{{- end -}}
{{- toYaml $args -}}
{{- end -}}

{{- /* flotilla.certSecret (dict root section): the webhook's certificate Secret for certificates.mode secret and
cert-manager. */ -}}
{{- define "flotilla.certSecret" -}}
{{- $s := get (include "flotilla.sections" . | fromYaml) .section -}}
{{- (index .root.Values .section).webhook.certSecretName | default (printf "%s-webhook-tls" $s.binary) -}}
{{- end -}}

{{- /* flotilla.podExtras (dict root section webhook): pod spec fields of a controller the values add. */ -}}
{{- define "flotilla.podExtras" -}}
{{- $m := .root.Values.manager -}}
{{- if $m.hostNetwork }}
hostNetwork: true
dnsPolicy: ClusterFirstWithHostNet
{{- end }}
{{- with $m.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- if and .webhook (ne .root.Values.certificates.mode "self-managed") }}
volumes:
- name: webhook-certs
  secret: {secretName: {{ include "flotilla.certSecret" . }}}
{{- end }}
{{- end -}}

{{- /* flotilla.containerExtras (dict root section webhook): container fields of a controller the values add. */ -}}
{{- define "flotilla.containerExtras" -}}
{{- if and .webhook (ne .root.Values.certificates.mode "self-managed") }}
volumeMounts:
- {name: webhook-certs, mountPath: /etc/flotilla/webhook-certs, readOnly: true}
{{- end }}
{{- end -}}

{{- /* flotilla.agentPodExtras (dict root section): pod spec fields of the node agent the values add. */ -}}
{{- define "flotilla.agentPodExtras" -}}
{{- with (index .root.Values .section).nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{- /* flotilla.failurePolicy (dict root section) */ -}}
{{- define "flotilla.failurePolicy" -}}
{{- $own := "" -}}
{{- with (index .root.Values .section).webhook }}{{ $own = .failurePolicy }}{{ end -}}
{{- $p := $own | default .root.Values.webhookConfiguration.failurePolicy -}}
{{- if not (has $p (list "Fail" "Ignore")) -}}
{{- fail (printf "%s: failurePolicy %q is neither Fail nor Ignore" (ternary (printf "%s.webhook.failurePolicy" .section) "webhookConfiguration.failurePolicy" (not (empty $own))) $p) -}}
{{- end -}}
{{- $p -}}
{{- end -}}

{{- /* flotilla.webhookAnnotations (dict root section binary): annotations of a webhook configuration, YAML. */ -}}
{{- define "flotilla.webhookAnnotations" -}}
{{- $a := deepCopy (.root.Values.externalCerts.annotations | default dict) -}}
{{- if eq .root.Values.certificates.mode "cert-manager" -}}
{{- $_ := set $a "cert-manager.io/inject-ca-from" (printf "flotilla-system/%s-webhook" .binary) -}}
{{- end -}}
{{- if $a }}{{ toYaml $a }}{{ end -}}
{{- end -}}

{{- /* flotilla.validate: fails on values no template would catch, naming the value. */ -}}
{{- define "flotilla.validate" -}}
{{- $v := .Values -}}
{{- $sections := include "flotilla.sections" . | fromYaml -}}
{{- $known := include "flotilla.knownGates" . | fromYaml -}}
{{- $all := list "AllAlpha" "AllBeta" -}}
{{- range $b, $gates := $known }}{{ $all = concat $all $gates }}{{ end -}}
{{- $external := false -}}
{{- range (splitList "," (toString $v.featureGates)) -}}
{{- if trim . -}}
{{- $kv := splitList "=" (trim .) -}}
{{- $name := trim (first $kv) -}}
{{- if or (ne (len $kv) 2) (not (has (trim (last $kv)) (list "true" "false"))) -}}
{{- fail (printf "featureGates: %q is not Name=true or Name=false" (trim .)) -}}
{{- end -}}
{{- if not (has $name $all) -}}
{{- fail (printf "featureGates: unknown feature gate %q: no Flotilla binary has it (kit/README.md lists each binary's gates)" $name) -}}
{{- end -}}
{{- if and (eq $name "EnableExternalCerts") (eq (trim (last $kv)) "true") }}{{ $external = true }}{{ end -}}
{{- end -}}
{{- end -}}
{{- if not (has ($v.manager.loggingFormat | default "json") (list "json" "console")) -}}
{{- fail (printf "manager.loggingFormat: %q is neither json nor console" $v.manager.loggingFormat) -}}
{{- end -}}
{{- if not (has $v.certificates.mode (list "self-managed" "secret" "cert-manager")) -}}
{{- fail (printf "certificates.mode: %q is none of self-managed, secret, cert-manager" $v.certificates.mode) -}}
{{- end -}}
{{- if and $external (eq $v.certificates.mode "self-managed") -}}
{{- fail "featureGates: EnableExternalCerts=true needs certificates.mode secret or cert-manager (the webhook binaries then read their certificates from a mounted Secret)" -}}
{{- end -}}
{{- $t := $v.webhookConfiguration.timeoutSeconds -}}
{{- if or (not (kindIs "float64" $t | or (kindIs "int" $t) (kindIs "int64" $t))) (lt (int $t) 1) (gt (int $t) 30) -}}
{{- fail (printf "webhookConfiguration.timeoutSeconds: %v is not a number of seconds from 1 to 30" $t) -}}
{{- end -}}
{{- range (include "flotilla.variantValues" . | fromYamlArray) -}}
{{- $p := splitList "." . -}}
{{- $x := index $v (first $p) | dig (last $p) "" -}}
{{- if and $x (or (not (kindIs "string" $x)) (gt (len $x) 63) (not (regexMatch "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" $x))) -}}
{{- fail (printf "%s: %q is not a namespace name (a DNS-1123 label: at most 63 lowercase letters, digits and '-', starting and ending with a letter or digit)" . (toString $x)) -}}
{{- end -}}
{{- end -}}
{{- $ports := dict -}}
{{- range $name, $s := $sections -}}
{{- $on := (index $v $s.feature).enabled -}}
{{- $sv := index $v $name -}}
{{- if and $on (ne $name "daemon") -}}
{{- $r := $sv.replicas -}}
{{- if not (kindIs "float64" $r | or (kindIs "int" $r) (kindIs "int64" $r)) -}}
{{- fail (printf "%s.replicas: %v is not a number" $name $r) -}}
{{- end -}}
{{- if and $s.webhook (lt (int $r) 1) -}}
{{- fail (printf "%s.replicas: %v, but %s serves webhooks (admission or CRD conversion): at least 1 (with no replica, every request they decide is refused; to run no %s, set %s.enabled=false)" $name $r $s.binary $s.binary $s.feature) -}}
{{- end -}}
{{- if lt (int $r) 0 -}}
{{- fail (printf "%s.replicas: %v is negative" $name $r) -}}
{{- end -}}
{{- if $v.manager.hostNetwork -}}
{{- $own := list (printf "%s.metrics.port" $name) (printf "%s.healthProbe.port" $name) -}}
{{- if $s.webhook }}{{ $own = append $own (printf "%s.webhook.port" $name) }}{{ end -}}
{{- range $own -}}
{{- $p := toString (int (index $v (splitList "." . | first) | dig (splitList "." . | rest | first) "port" 0)) -}}
{{- if hasKey $ports $p -}}
{{- fail (printf "manager.hostNetwork: %s and %s are both %s: on the host network every enabled controller needs ports of its own" (get $ports $p) . $p) -}}
{{- end -}}
{{- $_ := set $ports $p . -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /* flotilla.gomemlimit (dict root section default): GOMEMLIMIT, 90% of resources.limits.memory (Mi or Gi) in MiB;
the overlay's value (default) without a memory limit. */ -}}
{{- define "flotilla.gomemlimit" -}}
{{- $mem := dig "limits" "memory" "" ((index .root.Values .section).resources | default dict) | toString -}}
{{- if not $mem -}}
{{- .default -}}
{{- else if regexMatch "^[0-9]+Mi$" $mem -}}
{{- printf "%dMiB" (div (mul (trimSuffix "Mi" $mem | atoi) 9) 10) -}}
{{- else if regexMatch "^[0-9]+Gi$" $mem -}}
{{- printf "%dMiB" (div (mul (trimSuffix "Gi" $mem | atoi) 1024 9) 10) -}}
{{- else -}}
{{- fail (printf "%s.resources.limits.memory: %q: write it in Mi or Gi (GOMEMLIMIT, 90%% of it, is derived from it)" .section $mem) -}}
{{- end -}}
{{- end -}}
