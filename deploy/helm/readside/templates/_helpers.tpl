{{/* The release's name for its objects, at most 63 characters. */}}
{{- define "readside.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* Labels every pod of the release carries; Service and selectors use them. */}}
{{- define "readside.selectorLabels" -}}
app.kubernetes.io/name: readside
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "readside.labels" -}}
{{ include "readside.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The Secret the DSN files come from. */}}
{{- define "readside.secretName" -}}
{{- .Values.secret.existingSecret | default (printf "%s-dsn" (include "readside.fullname" .)) -}}
{{- end -}}

{{/*
One readside Deployment. Called with a dict: root (the chart's context),
role (all, tailer or projector), name (the Deployment's name), replicas and
c (the role's values: resources, goMemLimit, placement).
*/}}
{{- define "readside.deployment" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .name }}
  labels:
    {{- include "readside.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .role }}
spec:
  replicas: {{ .replicas }}
  {{- if eq .role "projector" }}
  # Safe to roll: every pod is a static group member under its pod name,
  # offsets commit with the rows, and the version guard drops older writes.
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxUnavailable: 1, maxSurge: 1}
  {{- else }}
  # Recreate: a rolling update would run two tailers at once, which take the
  # binlog stream and the Kafka transactional id from each other in turn
  # (docs/operations.md, "Two tailers").
  strategy:
    type: Recreate
  {{- end }}
  revisionHistoryLimit: 5
  selector:
    matchLabels:
      {{- include "readside.selectorLabels" $root | nindent 6 }}
      app.kubernetes.io/component: {{ .role }}
  template:
    metadata:
      labels:
        {{- include "readside.selectorLabels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ .role }}
        {{- with $v.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      annotations:
        # A changed config or Secret rolls the pods.
        checksum/config: {{ include (print $root.Template.BasePath "/configmap.yaml") $root | sha256sum }}
        checksum/secret: {{ include (print $root.Template.BasePath "/secret.yaml") $root | sha256sum }}
        prometheus.io/scrape: "true"
        prometheus.io/port: {{ $v.httpPort | quote }}
        prometheus.io/path: /metrics
        {{- with $v.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      terminationGracePeriodSeconds: {{ $v.terminationGracePeriodSeconds }}
      automountServiceAccountToken: false
      {{- with $v.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      securityContext:
        runAsNonRoot: true
        runAsUser: 65532
        runAsGroup: 65532
        # Makes the DSN files (mode 0440) readable by group 65532 only.
        fsGroup: 65532
        seccompProfile:
          type: RuntimeDefault
      {{- if eq .role "projector" }}
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: ScheduleAnyway
          labelSelector:
            matchLabels:
              {{- include "readside.selectorLabels" $root | nindent 14 }}
              app.kubernetes.io/component: projector
      {{- end }}
      {{- with .c.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .c.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .c.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      containers:
        - name: readside
          image: "{{ $v.image.repository }}:{{ $v.image.tag | default $root.Chart.AppVersion }}"
          imagePullPolicy: {{ $v.image.pullPolicy }}
          args: ["run", "--role", "{{ .role }}", "-c", "/etc/readside/readside.yaml", "--http", ":{{ $v.httpPort }}"]
          ports:
            - name: http
              containerPort: {{ $v.httpPort }}
          {{- with .c.goMemLimit }}
          env:
            - name: GOMEMLIMIT
              value: {{ . | quote }}
          {{- end }}
          {{- with .c.resources }}
          resources:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            allowPrivilegeEscalation: false
            readOnlyRootFilesystem: true
            capabilities:
              drop: [ALL]
          # /healthz (not ?strict=1: a projection stopped alone keeps it at
          # 200, a restart would not fix it); /readyz: connected and within
          # the configured lag.
          startupProbe:
            httpGet: {path: /healthz, port: http}
            {{- toYaml $v.probes.startup | nindent 12 }}
          livenessProbe:
            httpGet: {path: /healthz, port: http}
            {{- toYaml $v.probes.liveness | nindent 12 }}
          readinessProbe:
            httpGet: {path: /readyz, port: http}
            {{- toYaml $v.probes.readiness | nindent 12 }}
          volumeMounts:
            - name: config
              mountPath: /etc/readside
              readOnly: true
            - name: dsn
              mountPath: /var/run/secrets/readside
              readOnly: true
      volumes:
        - name: config
          configMap:
            name: {{ include "readside.fullname" $root }}-config
        - name: dsn
          secret:
            secretName: {{ include "readside.secretName" $root }}
            # readside refuses a world-readable DSN file.
            defaultMode: 0440
{{- end -}}
