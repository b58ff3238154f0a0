{{/*
Labels helm's own tools expect on every object the chart makes, next to the app.kubernetes.io labels the
kustomize tree sets. Never on pod templates or selectors: a selector cannot change after install.
*/}}
{{- define "gleaner.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The labels of a component's objects: (list $ "gleaner-manager"); an empty name gives part-of alone. */}}
{{- define "gleaner.labels" -}}
{{- $root := index . 0 -}}
{{- $name := index . 1 -}}
{{- if $name }}
app.kubernetes.io/name: {{ $name }}
{{- end }}
app.kubernetes.io/part-of: gleaner
{{ include "gleaner.helmLabels" $root }}
{{- end }}

{{/* A component's image: (list $ .Values.manager). */}}
{{- define "gleaner.image" -}}
{{- $root := index . 0 -}}
{{- $c := index . 1 -}}
{{- $repo := $c.image.repository -}}
{{- if $root.Values.image.registry }}{{ $repo = printf "%s/%s" $root.Values.image.registry $repo }}{{ end -}}
{{- printf "%s:%s" $repo (default $root.Chart.AppVersion $c.image.tag) -}}
{{- end }}

{{/* One flag value: lists joined by commas, maps as name=value pairs, whole numbers without an exponent. */}}
{{- define "gleaner.flagValue" -}}
{{- if kindIs "slice" . -}}
{{- $items := list -}}
{{- range . }}{{ $items = append $items (include "gleaner.flagValue" .) }}{{ end -}}
{{- join "," $items -}}
{{- else if kindIs "map" . -}}
{{- $pairs := list -}}
{{- range $k, $v := . }}{{ $pairs = append $pairs (printf "%s=%s" $k (include "gleaner.flagValue" $v)) }}{{ end -}}
{{- join "," $pairs -}}
{{- else if and (kindIs "float64" .) (eq . (floor .)) -}}
{{- int64 . -}}
{{- else -}}
{{- toString . -}}
{{- end -}}
{{- end }}

{{/* --name=value for each flag of the map that is not null, by name. */}}
{{- define "gleaner.flags" -}}
{{- range $name, $v := . }}
{{- if not (kindIs "invalid" $v) }}
- {{ printf "--%s=%s" $name (include "gleaner.flagValue" $v) | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The port of a bind address (":8080", "127.0.0.1:10280"); empty when the endpoint is off ("0"). */}}
{{- define "gleaner.port" -}}
{{- if and (ne (toString .) "0") (contains ":" (toString .)) -}}
{{- regexReplaceAll "^.*:" (toString .) "" -}}
{{- end -}}
{{- end }}

{{/* The host of a bind address when it names one ("127.0.0.1:10280" gives 127.0.0.1), for the probes. */}}
{{- define "gleaner.host" -}}
{{- $h := regexReplaceAll ":[^:]*$" (toString .) "" -}}
{{- if and $h (ne $h "0.0.0.0") (ne $h "[::]") }}{{ $h }}{{ end -}}
{{- end }}

{{/* A component's resources and the sizing row they come from: (list $ .Values.manager "manager"). */}}
{{- define "gleaner.sizing" -}}
{{- $root := index . 0 -}}
{{- $c := index . 1 -}}
{{- $table := index $root.Values.sizing (index . 2) -}}
{{- if $c.resources -}}
custom
{{- else if hasKey $table $c.sizing -}}
{{ $c.sizing }}
{{- else -}}
{{- fail (printf "%s.sizing %q is not a row of sizing.%s (%s); set %s.resources and sizing: custom for other values" (index . 2) $c.sizing (index . 2) (keys $table | sortAlpha | join ", ") (index . 2)) -}}
{{- end -}}
{{- end }}

{{- define "gleaner.resources" -}}
{{- $root := index . 0 -}}
{{- $c := index . 1 -}}
{{- if $c.resources }}{{ toYaml $c.resources }}{{ else }}{{ toYaml (index (index $root.Values.sizing (index . 2)) $c.sizing) }}{{ end -}}
{{- end }}
