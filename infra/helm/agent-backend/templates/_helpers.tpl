{{/* The release's resource name prefix: <release> when it already names the chart, else <release>-agent-backend. */}}
{{- define "agent-backend.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" -}}
{{- else if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 50 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 50 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Selector labels of one component: application, release and component (never component alone). */}}
{{- define "agent-backend.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Labels of every object: the selector labels plus version and manager. */}}
{{- define "agent-backend.labels" -}}
{{ include "agent-backend.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: agent-backend
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end -}}

{{- define "agent-backend.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* The secrets every role needs: a missing one fails the render (no placeholder is deployed). */}}
{{- define "agent-backend.secretEnv" -}}
- name: REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "redis.existingSecret is required: the name of a Secret with the Redis URL (key redis.secretKey, default REDIS_URL)" .Values.redis.existingSecret }}
      key: {{ .Values.redis.secretKey }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ required "postgresql.existingSecret is required: the name of a Secret with the PostgreSQL URL (key postgresql.secretKey, default DATABASE_URL)" .Values.postgresql.existingSecret }}
      key: {{ .Values.postgresql.secretKey }}
{{- range $name, $ref := .Values.secretEnv }}
{{- if $ref.existingSecret }}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ $ref.existingSecret }}
      key: {{ $ref.key | default $name }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The pod security of Pod Security "restricted" (values can only add to it). */}}
{{- define "agent-backend.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ .Values.securityContext.runAsUser }}
runAsGroup: {{ .Values.securityContext.runAsGroup }}
fsGroup: {{ .Values.securityContext.runAsGroup }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "agent-backend.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
capabilities:
  drop: ['ALL']
{{- end -}}

{{/* The JWT key Secret's name (required). */}}
{{- define "agent-backend.jwtSecret" -}}
{{- required "jwt.existingSecret is required: the name of a Secret with public.pem and private.pem (node infra/generate-keys.mjs writes a pair)" .Values.jwt.existingSecret -}}
{{- end -}}

{{/* NetworkPolicy peers from [{ cidr, except } | { namespaceSelector, podSelector }]. */}}
{{- define "agent-backend.peers" -}}
{{- range . }}
{{- if .cidr }}
- ipBlock:
    cidr: {{ .cidr }}
    {{- with .except }}
    except:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- else }}
- {{- with .namespaceSelector }}
  namespaceSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  podSelector:
    {{- toYaml (.podSelector | default dict) | nindent 4 }}
{{- end }}
{{- end }}
{{- end }}
{{- define "agent-backend.egressRule" -}}
- {{- with .to }}
  to:
    {{- include "agent-backend.peers" . | nindent 4 }}
  {{- end }}
  ports:
    {{- range .ports }}
    - protocol: TCP
      port: {{ . }}
    {{- end }}
{{- end }}
