/**
 * OpenTelemetry's standard variables (https://opentelemetry.io/docs/specs/otel/protocol/exporter/):
 * traces are exported when OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as given) or
 * OTEL_EXPORTER_OTLP_ENDPOINT (with `/v1/traces` added) is set, and off otherwise (no SDK, no cost).
 */
export interface TracingConfig {
  tracesUrl: string;
  /** OTEL_EXPORTER_OTLP_PROTOCOL (or _TRACES_PROTOCOL): http/protobuf, the standard's default, or http/json. */
  protocol: 'http/protobuf' | 'http/json';
  /** OTEL_SERVICE_NAME, default pipeline-orchestrator. */
  serviceName: string;
  /** OTEL_EXPORTER_OTLP_HEADERS (or _TRACES_HEADERS): `key=value,key2=value2`, URL-encoded values. */
  headers?: Record<string, string>;
  /** OTEL_BSP_SCHEDULE_DELAY: how long spans wait in the batch before an export (ms, default 5000). */
  exportDelayMs: number;
}

const PROTOCOLS = ['http/protobuf', 'http/json'] as const;

const value = (env: Readonly<Record<string, string | undefined>>, name: string): string | null => {
  const text = env[name]?.trim();
  return text === undefined || text === '' ? null : text;
};

const parseHeaders = (text: string, name: string): Record<string, string> => {
  const headers: Record<string, string> = {};
  for (const pair of text.split(',')) {
    if (pair.trim() === '') continue;
    const at = pair.indexOf('=');
    if (at <= 0) throw new Error(`${name} must be key=value pairs separated by commas, got "${text.slice(0, 100)}"`);
    headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
  }
  return headers;
};

/** Null when tracing is off. Throws a message naming the variable for a value it cannot use. */
export const tracingConfigFrom = (env: Readonly<Record<string, string | undefined>>): TracingConfig | null => {
  if (value(env, 'OTEL_SDK_DISABLED')?.toLowerCase() === 'true') return null;
  if (value(env, 'OTEL_TRACES_EXPORTER')?.toLowerCase() === 'none') return null;
  const tracesEndpoint = value(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = value(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (tracesEndpoint === null && endpoint === null) return null;
  const tracesUrl = tracesEndpoint ?? `${(endpoint as string).replace(/\/+$/, '')}/v1/traces`;
  let url: URL;
  try {
    url = new URL(tracesUrl);
  } catch {
    throw new Error(`${tracesEndpoint !== null ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT'} must be an http(s) URL, got "${tracesUrl.slice(0, 200)}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error(`the OTLP endpoint must be an http(s) URL, got "${tracesUrl.slice(0, 200)}"`);
  const protocolName = value(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') !== null ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocol = value(env, protocolName) ?? 'http/protobuf';
  if (protocol === 'grpc') throw new Error(`${protocolName}=grpc is not supported by this service: use http/protobuf (the default) or http/json (the collector's port 4318)`);
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) throw new Error(`${protocolName} must be http/protobuf or http/json, got "${protocol}"`);
  const headersName = value(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS') !== null ? 'OTEL_EXPORTER_OTLP_TRACES_HEADERS' : 'OTEL_EXPORTER_OTLP_HEADERS';
  const headersText = value(env, headersName);
  const delayText = value(env, 'OTEL_BSP_SCHEDULE_DELAY');
  const exportDelayMs = delayText === null ? 5000 : Number(delayText);
  if (!Number.isInteger(exportDelayMs) || exportDelayMs < 0 || exportDelayMs > 600_000) throw new Error(`OTEL_BSP_SCHEDULE_DELAY must be milliseconds (0-600000), got "${delayText}"`);
  return {
    tracesUrl: url.toString(),
    protocol: protocol as TracingConfig['protocol'],
    serviceName: value(env, 'OTEL_SERVICE_NAME') ?? 'pipeline-orchestrator',
    ...(headersText === null ? {} : { headers: parseHeaders(headersText, headersName) }),
    exportDelayMs,
  };
};
