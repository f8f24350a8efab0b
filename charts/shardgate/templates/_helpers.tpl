{{- define "shardgate.name" -}}shardgate{{- end -}}

{{- define "shardgate.fullname" -}}
{{- if contains "shardgate" .Release.Name -}}{{ .Release.Name | trunc 63 | trimSuffix "-" }}{{- else -}}{{ printf "%s-shardgate" .Release.Name | trunc 63 | trimSuffix "-" }}{{- end -}}
{{- end -}}

{{- define "shardgate.labels" -}}
app.kubernetes.io/name: shardgate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "shardgate.selectorLabels" -}}
app.kubernetes.io/name: shardgate
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: seed-controller
{{- end -}}

{{- define "shardgate.zone" -}}
{{- required "dns.zone is required: the DNS zone user-cluster domains are created in, e.g. --set dns.zone=clusters.example.com" .Values.dns.zone | trimSuffix "." -}}
{{- end -}}

{{/* Namespaces whose kubeconfig Secrets register clusters. */}}
{{- define "shardgate.secretNamespaces" -}}
{{- if .Values.sources.kubeconfigSecretNamespaces -}}{{ join "," .Values.sources.kubeconfigSecretNamespaces }}{{- else -}}{{ .Release.Namespace }}{{- end -}}
{{- end -}}

{{/* The controller's flags; tests run the binary with exactly these. */}}
{{- define "shardgate.args" -}}
- --dns-zone={{ include "shardgate.zone" . }}
- --served-zones={{ if .Values.dns.servedZones }}{{ join "," .Values.dns.servedZones }}{{ else }}{{ include "shardgate.zone" . }}{{ end }}
{{- if gt (.Values.externalDNS.shares | int) 1 }}
- --dns-shares={{ .Values.externalDNS.shares | int }}
{{- end }}
- --kubeconfig-secret-namespaces={{ include "shardgate.secretNamespaces" . }}
{{- with .Values.dns.verify.servers }}
- --dns-verify-servers={{ join "," . }}
- --dns-verify-qps={{ $.Values.dns.verify.qps }}
- --dns-verify-interval={{ $.Values.dns.verify.interval }}
{{- end }}
- --source-removal-grace={{ .Values.sources.removalGrace }}
- --kubeconfig-resync-period={{ .Values.sources.kubeconfigResyncPeriod }}
- --allow-insecure-kubeconfigs={{ .Values.sources.allowInsecureKubeconfigs }}
- --acme-orders-per-week={{ .Values.tls.newOrdersPerWeek | default 20 }}
- --kube-api-qps={{ .Values.kubeAPI.qps }}
- --kube-api-burst={{ .Values.kubeAPI.burst }}
- --metrics-bind-address=:{{ .Values.metrics.port }}
- --metrics-secure={{ .Values.metrics.secure }}
{{- if and .Values.metrics.secure .Values.metrics.certSecret }}
- --metrics-cert-dir=/etc/shardgate/metrics-tls
{{- end }}
- --health-probe-bind-address=:8081
- --canary-interval={{ .Values.canary.interval }}
- --canary-qps={{ .Values.canary.qps }}
{{- with .Values.canary.refuseCIDRs }}
- --canary-refuse-cidrs={{ join "," . }}
{{- end }}
{{- with .Values.canary.allowCIDRs }}
- --canary-allow-cidrs={{ join "," . }}
{{- end }}
- --canary-node-port-range={{ .Values.canary.nodePortRange }}
{{- with .Values.canary.proxy }}
- --canary-proxy={{ . }}
{{- end }}
{{- if .Values.statusPage.enabled }}
- --status-bind-address=:{{ .Values.statusPage.port }}
{{- with .Values.statusPage.certSecret }}
- --status-cert-dir=/etc/shardgate/status-tls
{{- end }}
{{- end }}
{{- if gt (int .Values.replicas) 1 }}
- --sharding
- --leader-elect=false
{{- else }}
- --leader-elect={{ .Values.leaderElection.enabled }}
{{- end }}
- --leader-election-namespace={{ .Release.Namespace }}
{{- if .Values.admissionWebhook.enabled }}
- --admission-webhook-bind-address=:{{ .Values.admissionWebhook.port }}
- --admission-webhook-configuration={{ include "shardgate.fullname" . }}
{{- $svc := include "shardgate.webhookService" . }}
- --admission-webhook-hosts={{ $svc }}.{{ .Release.Namespace }}.svc,{{ $svc }}.{{ .Release.Namespace }}.svc.cluster.local
{{- end }}
- --zap-log-level={{ .Values.logLevel }}
{{- end -}}

{{- define "shardgate.webhookService" -}}
{{- printf "%s-webhook" (include "shardgate.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "shardgate.acmeIssuerName" -}}
{{- .Values.tls.acme.name | default (printf "%s-acme" (include "shardgate.fullname" .) | trunc 63 | trimSuffix "-") -}}
{{- end -}}

{{/* The profile's tls block: the named issuer, else the chart's ACME Issuer, else none. */}}
{{- define "shardgate.profileTLS" -}}
{{- $ref := .Values.tls.issuerRef -}}
{{- if and (not $ref.name) .Values.tls.acme.enabled -}}
{{- $ref = dict "name" (include "shardgate.acmeIssuerName" .) "kind" "Issuer" -}}
{{- end -}}
{{- if $ref.name }}
issuerRef: {{- toYaml $ref | nindent 2 }}
{{- with .Values.tls.duration }}
duration: {{ . }}
{{- end }}
{{- with .Values.tls.renewBefore }}
renewBefore: {{ . }}
{{- end }}
redirectHTTP: {{ .Values.tls.redirectHTTP }}
{{- end }}
{{- end -}}

{{- /*
shardgate.unlabelledEndpoints is non-empty while the seed holds a DNSEndpoint without Shardgate's
label (an upgrade from a release that did not label them): external-dns then runs without the label
filter, since its sync policy would delete the records of every DNSEndpoint it no longer sees. The
controller labels them all on its first pass; the next upgrade turns the filter on. `helm template`
and a first install see none.
*/ -}}
{{- define "shardgate.unlabelledEndpoints" -}}
{{- if .Capabilities.APIVersions.Has "externaldns.k8s.io/v1alpha1/DNSEndpoint" -}}
{{- $all := lookup "externaldns.k8s.io/v1alpha1" "DNSEndpoint" "" "" -}}
{{- range ($all.items | default list) -}}
{{- if ne (get (.metadata.labels | default dict) "shardgate.io/managed-by") "shardgate" -}}unlabelled {{ end -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- /*
shardgate.externalDNS renders one external-dns Deployment: root (the chart's context), name,
component, policy, interval and filter (its label selector; "" for none).
*/ -}}
{{- define "shardgate.externalDNS" -}}
{{- $v := .root.Values.externalDNS }}
{{- /* external-dns refuses a flag given twice: externalDNS.args may replace the interval and the
client budget, not what sharing and the registry rest on. */}}
{{- $userFlags := list }}
{{- range $v.args }}{{ $userFlags = append $userFlags (regexReplaceAll "=.*$" (toString .) "") }}{{ end }}
{{- range list "--provider" "--registry" "--txt-owner-id" "--txt-wildcard-replacement" "--policy" "--label-filter" "--crd-source-apiversion" "--crd-source-kind" }}
{{- if has . $userFlags }}
{{- fail (printf "externalDNS.args may not set %s: the chart sets it (externalDNS.provider, .ownerID, .labelFilter, .shares)" .) }}
{{- end }}
{{- end }}
{{- /* A share's TXT cache goes stale when the janitor or another share writes its names: an
update then leaves the dead targets answered until the janitor runs (docs/operator-guide.md). */}}
{{- if and (has "--txt-cache-interval" $userFlags) (gt ($v.shares | int) 1) }}
{{- fail "externalDNS.args may not set --txt-cache-interval with externalDNS.shares > 1: a share's cache goes stale when another instance writes its names, and dead targets stay answered until the janitor runs" }}
{{- end }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  namespace: {{ .root.Release.Namespace }}
  labels: {{- include "shardgate.labels" .root | nindent 4 }}
spec:
  replicas: 1
  strategy:
    type: Recreate
  selector:
    matchLabels:
      app.kubernetes.io/instance: {{ .root.Release.Name }}
      app.kubernetes.io/component: {{ .component }}
  template:
    metadata:
      labels:
        app.kubernetes.io/instance: {{ .root.Release.Name }}
        app.kubernetes.io/component: {{ .component }}
    spec:
      serviceAccountName: {{ printf "%s-external-dns" (include "shardgate.fullname" .root) }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        seccompProfile:
          type: RuntimeDefault
      containers:
      - name: external-dns
        image: {{ $v.image }}
        args:
        - --source=crd
        - --crd-source-apiversion=externaldns.k8s.io/v1alpha1
        - --crd-source-kind=DNSEndpoint
        - --provider={{ $v.provider }}
        - --domain-filter={{ include "shardgate.zone" .root }}
        - --registry=txt
        - --txt-owner-id={{ $v.ownerID | default .root.Release.Name }}
        # DNS wildcards cannot carry the registry's prefix: "*" becomes "star" in TXT names.
        - --txt-wildcard-replacement=star
        - --policy={{ .policy }}
        {{- if not (has "--interval" $userFlags) }}
        - --interval={{ .interval }}
        {{- end }}
        # It writes each changed DNSEndpoint's status, one at a time, before it publishes any:
        # client-go's default 5 a second held a hundred changes back 20 s.
        {{- if not (has "--kube-api-qps" $userFlags) }}
        - --kube-api-qps={{ $v.kubeAPI.qps }}
        {{- end }}
        {{- if not (has "--kube-api-burst" $userFlags) }}
        - --kube-api-burst={{ $v.kubeAPI.burst }}
        {{- end }}
        {{- with .filter }}
        # Only Shardgate's DNSEndpoints (it labels its own){{ if contains "dns-share" . }}, of this share{{ end }}.
        - --label-filter={{ . }}
        {{- end }}
        {{- range $v.args }}
        - {{ . }}
        {{- end }}
        {{- with $v.env }}
        env: {{- toYaml . | nindent 8 }}
        {{- end }}
        securityContext:
          allowPrivilegeEscalation: false
          readOnlyRootFilesystem: true
          capabilities:
            drop: ["ALL"]
{{- end }}

{{- /*
shardgate.externalDNSInterval is the share instances' sync interval: externalDNS.interval, or by
default 500ms for rfc2136 (its loop wakes once a second: every wake-up) and 1m for a provider
with a request budget (a cloud API), which a zone listing twice a second would exhaust.
*/ -}}
{{- define "shardgate.externalDNSInterval" -}}
{{- .Values.externalDNS.interval | default (ternary "500ms" "1m" (eq .Values.externalDNS.provider "rfc2136")) -}}
{{- end -}}
