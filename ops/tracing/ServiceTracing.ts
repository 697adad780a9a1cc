import { defaultTextMapGetter, defaultTextMapSetter, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Context, type Span, type Tracer } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type Koa from 'koa';
import type { AppState } from '../../shared/http/AppState.ts';
import type { RunSpans, RunStep, RunTracing } from '../../shared/ports/RunTracing.ts';
import type { TracingConfig } from './tracingConfig.ts';

/** The span attribute naming a run's task on every span of the run (issue 35). */
export const TASK_LAUI_ATTRIBUTE = 'task.laui';

const propagator = new W3CTraceContextPropagator();

const carrierOf = (spanContext: Context): Record<string, string> => {
  const carrier: Record<string, string> = {};
  propagator.inject(spanContext, carrier, defaultTextMapSetter);
  return carrier;
};

const errorText = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/**
 * OpenTelemetry traces of one service instance: its own tracer provider (never the global one: a
 * test process starts several services, and a global registration would mix them) and explicit
 * contexts. No context manager is installed: on Node 20 the async-hooks one enables promise hooks,
 * which cost every promise of the service, so the HTTP span is found by its request's correlation id
 * where a run is dispatched, the same way write positions are (ops/http/readYourWrites.ts).
 */
export class ServiceTracing implements RunTracing {
  private readonly tracer: Tracer;
  /** The HTTP span of each request being answered, by correlation id. */
  private readonly requests = new Map<string, Context>();

  /**
   * The SDK and the exporters are imported here, when tracing is configured, not with the module:
   * a start without OTEL_EXPORTER_OTLP_ENDPOINT (the default) no longer loads them (a few tenths of
   * a second of a start on this machine, issue 35). Only the packages: our own modules stay static.
   */
  static async open(config: TracingConfig & { serviceVersion: string }): Promise<ServiceTracing> {
    const [{ resourceFromAttributes }, { BasicTracerProvider, BatchSpanProcessor }, { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION }] = await Promise.all([
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
      import('@opentelemetry/semantic-conventions'),
    ]);
    const exporterConfig = { url: config.tracesUrl, ...(config.headers ? { headers: config.headers } : {}) };
    const exporter =
      config.protocol === 'http/json'
        ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter(exporterConfig)
        : new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter(exporterConfig);
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName, [ATTR_SERVICE_VERSION]: config.serviceVersion }),
      // Batched: a span costs the request path a push into a buffer, never an export.
      spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: config.exportDelayMs })],
    });
    return new ServiceTracing(provider, config.serviceVersion);
  }

  private constructor(
    private readonly provider: BasicTracerProvider,
    serviceVersion: string,
  ) {
    this.tracer = this.provider.getTracer('pipeline-orchestrator', serviceVersion);
  }

  /** An HTTP server span per request, child of the caller's `traceparent` when it sends one. */
  middleware(): Koa.Middleware<AppState> {
    return async (ctx, next) => {
      const parent = propagator.extract(ROOT_CONTEXT, ctx.headers, defaultTextMapGetter);
      const span = this.tracer.startSpan(`${ctx.method} ${ctx.path}`, { kind: SpanKind.SERVER, attributes: { 'http.request.method': ctx.method, 'url.path': ctx.path } }, parent);
      const id = ctx.state.correlationId;
      this.requests.set(id, trace.setSpan(parent, span));
      try {
        await next();
      } catch (error) {
        span.recordException(error as Error);
        throw error;
      } finally {
        this.requests.delete(id);
        // The route template, not the path: paths carry LAUIs.
        const route = (ctx as { _matchedRoute?: unknown })._matchedRoute;
        if (typeof route === 'string') {
          span.updateName(`${ctx.method} ${route}`);
          span.setAttribute('http.route', route);
        }
        span.setAttribute('http.response.status_code', ctx.status);
        if (ctx.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
    };
  }

  dispatched(taskLaui: string, correlationId: string): Readonly<Record<string, string>> {
    const parent = this.requests.get(correlationId) ?? ROOT_CONTEXT;
    const span = this.tracer.startSpan('task.dispatch', { kind: SpanKind.PRODUCER, attributes: { [TASK_LAUI_ATTRIBUTE]: taskLaui, 'messaging.destination.name': 'execute_task' } }, parent);
    const carrier = carrierOf(trace.setSpan(parent, span));
    span.end();
    return carrier;
  }

  worker(taskLaui: string, headers: Readonly<Record<string, string>> | undefined): RunSpans {
    const parent = headers === undefined ? ROOT_CONTEXT : propagator.extract(ROOT_CONTEXT, headers, defaultTextMapGetter);
    const run: Span = this.tracer.startSpan('task.execute', { kind: SpanKind.CONSUMER, attributes: { [TASK_LAUI_ATTRIBUTE]: taskLaui } }, parent);
    const within = trace.setSpan(parent, run);
    let finished = false;
    return {
      step: async <T>(step: RunStep, work: () => Promise<T>, attributes: Readonly<Record<string, string | number | boolean>> = {}): Promise<T> => {
        const span = this.tracer.startSpan(`task.${step}`, { attributes: { [TASK_LAUI_ATTRIBUTE]: taskLaui, ...attributes } }, within);
        try {
          return await work();
        } catch (error) {
          span.recordException(error as Error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: errorText(error) });
          throw error;
        } finally {
          span.end();
        }
      },
      finish: (state, error) => {
        if (finished) return;
        finished = true;
        if (state !== null) run.setAttribute('task.state', state);
        if (error !== undefined) run.setStatus({ code: SpanStatusCode.ERROR, message: errorText(error) });
        else if (state !== null && state !== 'success') run.setStatus({ code: SpanStatusCode.ERROR, message: `the run ended ${state}` });
        run.end();
      },
    };
  }

  /** Exports what is buffered (a stop must not lose the last spans), then stops. */
  async shutdown(): Promise<void> {
    await this.provider.shutdown();
  }
}
