{{/* The release's full name: the release name, unless fullnameOverride says otherwise. */}}
{{- define "pyscheduler.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "pyscheduler.name" -}}
{{- default "py-scheduler" .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "pyscheduler.serviceAccountName" -}}
{{- default (include "pyscheduler.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "pyscheduler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "pyscheduler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "pyscheduler.labels" -}}
{{ include "pyscheduler.selectorLabels" . }}
app.kubernetes.io/part-of: pyscheduler
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "pyscheduler.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* The KubeSchedulerConfiguration pyscheduler run reads. */}}
{{- define "pyscheduler.config" -}}
{{- $profiles := .Values.profiles -}}
{{- if not $profiles -}}
{{- $profiles = list (dict "schedulerName" .Values.schedulerName) -}}
{{- end -}}
{{- $le := dict "leaderElect" (and .Values.leaderElection.enabled true) "resourceLock" "leases" "resourceNamespace" .Release.Namespace "resourceName" (include "pyscheduler.fullname" .) "leaseDuration" .Values.leaderElection.leaseDuration "renewDeadline" .Values.leaderElection.renewDeadline "retryPeriod" .Values.leaderElection.retryPeriod -}}
{{- $cfg := dict "apiVersion" "kubescheduler.config.k8s.io/v1" "kind" "KubeSchedulerConfiguration" "leaderElection" $le "clientConnection" .Values.clientConnection "profiles" $profiles -}}
{{- $cfg = merge $cfg (omit .Values.extraConfig "apiVersion" "kind" "leaderElection" "profiles" "clientConnection") -}}
{{- toYaml $cfg -}}
{{- end -}}
