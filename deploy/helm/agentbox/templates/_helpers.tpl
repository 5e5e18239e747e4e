{{- /*
Shared pieces of the AgentBox chart.

The templates use only Go text/template's own actions and functions (define/template, if, with,
range, and, or, not, eq, printf, index): no Sprig and none of Helm's additions (include, toYaml,
nindent, default, quote, required). They render the same under Helm and under the chart test
(test/unit/helm-chart.test.ts), which runs Go's own text/template engine without Helm's function
library. What that costs:
- `printf "%q"` quotes a string (Go's double-quoted form, which YAML reads the same way); a number
  or boolean that must become a string goes through `printf "%v"` first.
- Labels are written as YAML flow mappings ({a: "x", b: "y"}), so one helper serves every
  indentation; the env list, resources, node selector and tolerations are emitted at the one depth
  where a pod template's container or pod spec puts them (both workloads nest them alike).
- `or .a .b` stands in for `default`; every value the templates read is declared in values.yaml.
*/ -}}

{{- /* Labels that select the pods of this release (no braces: call sites add the component). */ -}}
{{- define "agentbox.selectorLabels" -}}
app.kubernetes.io/name: "agentbox", app.kubernetes.io/instance: {{ printf "%q" .Release.Name }}
{{- end }}

{{- /* Every object's labels. */ -}}
{{- define "agentbox.labels" -}}
{{ template "agentbox.selectorLabels" . }}, app.kubernetes.io/version: {{ printf "%q" .Chart.AppVersion }}, app.kubernetes.io/managed-by: {{ printf "%q" .Release.Service }}, helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | printf "%q" }}
{{- end }}

{{- define "agentbox.image" -}}
{{ printf "%s:%s" .Values.image.repository (or .Values.image.tag .Chart.AppVersion) | printf "%q" }}
{{- end }}

{{- /*
The environment both roles share, as items of containers[0].env (12 spaces deep). Node identity:
AGENTBOX_NODE_URL is the pod's own address, where other nodes forward requests for its sandboxes
(an address, not a DNS name, so a forwarded request costs no lookup); the nodes' own routes
(/v1/internal/*) listen on the pod's address at internalPort, never on the public port.
*/ -}}
{{- define "agentbox.env" }}
            - name: AGENTBOX_HOST
              value: "0.0.0.0"
            - name: AGENTBOX_PORT
              value: {{ printf "%v" .Values.port | printf "%q" }}
            - name: AGENTBOX_DATA_DIR
              value: "/var/lib/agentbox"
            - name: AGENTBOX_NODE_ID
              valueFrom:
                fieldRef:
                  fieldPath: metadata.name
            - name: AGENTBOX_POD_IP
              valueFrom:
                fieldRef:
                  fieldPath: status.podIP
            - name: AGENTBOX_NODE_URL
              value: {{ printf "http://$(AGENTBOX_POD_IP):%v" .Values.port | printf "%q" }}
            - name: AGENTBOX_INTERNAL_HOST
              value: "$(AGENTBOX_POD_IP)"
            - name: AGENTBOX_INTERNAL_PORT
              value: {{ printf "%v" .Values.internalPort | printf "%q" }}
            - name: AGENTBOX_INTERNAL_URL
              value: {{ printf "http://$(AGENTBOX_POD_IP):%v" .Values.internalPort | printf "%q" }}
            - name: AGENTBOX_DATABASE_URL
              valueFrom:
                secretKeyRef:
                  name: {{ printf "%q" .Values.secrets.databaseUrl.name }}
                  key: {{ printf "%q" .Values.secrets.databaseUrl.key }}
            - name: AGENTBOX_REDIS_URL
              valueFrom:
                secretKeyRef:
                  name: {{ printf "%q" .Values.secrets.redisUrl.name }}
                  key: {{ printf "%q" .Values.secrets.redisUrl.key }}
            - name: AGENTBOX_CLUSTER_SECRET
              valueFrom:
                secretKeyRef:
                  name: {{ printf "%q" .Values.secrets.clusterSecret.name }}
                  key: {{ printf "%q" .Values.secrets.clusterSecret.key }}
            - name: AGENTBOX_ADMIN_KEY
              valueFrom:
                secretKeyRef:
                  name: {{ printf "%q" .Values.secrets.adminKey.name }}
                  key: {{ printf "%q" .Values.secrets.adminKey.key }}
{{- with .Values.s3 }}
{{- if .bucket }}
            - name: AGENTBOX_FILES_BACKEND
              value: "s3"
            - name: AGENTBOX_S3_BUCKET
              value: {{ printf "%q" .bucket }}
{{- if .endpoint }}
            - name: AGENTBOX_S3_ENDPOINT
              value: {{ printf "%q" .endpoint }}
{{- end }}
            - name: AGENTBOX_S3_REGION
              value: {{ printf "%q" .region }}
            - name: AGENTBOX_S3_PREFIX
              value: {{ printf "%q" .prefix }}
            - name: AGENTBOX_S3_FORCE_PATH_STYLE
              value: {{ printf "%v" .forcePathStyle | printf "%q" }}
{{- if .credentials.name }}
            - name: AGENTBOX_S3_ACCESS_KEY_ID
              valueFrom:
                secretKeyRef:
                  name: {{ printf "%q" .credentials.name }}
                  key: {{ printf "%q" .credentials.accessKeyIdKey }}
            - name: AGENTBOX_S3_SECRET_ACCESS_KEY
              valueFrom:
                secretKeyRef:
                  name: {{ printf "%q" .credentials.name }}
                  key: {{ printf "%q" .credentials.secretAccessKeyKey }}
{{- end }}
{{- end }}
{{- end }}
{{- range $name, $value := .Values.env }}
            - name: {{ printf "%q" $name }}
              value: {{ printf "%v" $value | printf "%q" }}
{{- end }}
{{- end }}

{{- /* A container's resources (10 spaces deep); the dot is the role's `resources` value. */ -}}
{{- define "agentbox.resources" }}
          resources:
{{- with .requests }}
            requests:
{{- range $name, $quantity := . }}
              {{ $name }}: {{ printf "%v" $quantity | printf "%q" }}
{{- end }}
{{- end }}
{{- with .limits }}
            limits:
{{- range $name, $quantity := . }}
              {{ $name }}: {{ printf "%v" $quantity | printf "%q" }}
{{- end }}
{{- end }}
{{- end }}

{{- /* Probes of a container (10 spaces deep) on the health endpoint; the dot is the root. */ -}}
{{- define "agentbox.probes" }}
          # Up to five minutes to start: a node re-adopts or ends the sandboxes it owned and fills
          # its warm pool before it listens.
          startupProbe:
            httpGet:
              path: {{ printf "%q" .Values.probes.path }}
              port: http
            periodSeconds: 5
            failureThreshold: 60
          # Generous: a restart of an executor ends every sandbox on it, so a busy minute is not
          # a reason to restart.
          livenessProbe:
            httpGet:
              path: {{ printf "%q" .Values.probes.path }}
              port: http
            periodSeconds: 10
            timeoutSeconds: 5
            failureThreshold: 6
          readinessProbe:
            httpGet:
              path: {{ printf "%q" .Values.probes.path }}
              port: http
            periodSeconds: 5
            timeoutSeconds: 2
            failureThreshold: 2
{{- end }}

{{- /* Node selector and tolerations of a pod spec (6 spaces deep); the dot is the role's values. */ -}}
{{- define "agentbox.placement" }}
{{- with .nodeSelector }}
      nodeSelector:
{{- range $key, $value := . }}
        {{ printf "%q" $key }}: {{ printf "%v" $value | printf "%q" }}
{{- end }}
{{- end }}
{{- with .tolerations }}
      tolerations:
{{- range . }}
        - key: {{ printf "%q" .key }}
          operator: {{ printf "%q" .operator }}
          effect: {{ printf "%q" .effect }}
{{- with index . "value" }}
          value: {{ printf "%q" . }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
