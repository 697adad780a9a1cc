import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { AppError, unprocessable } from '../../shared/errors.ts';
import type { AppState } from '../../shared/http/AppState.ts';
import { exceedsDepth, JSON_MAX_DEPTH } from '../../shared/validation/jsonDepth.ts';

/** The JSON entry of a body nested deeper than JSON_MAX_DEPTH (the parser refuses it like bad JSON). */
export const tooDeepEntry = () => ({
  type: 'json_invalid',
  loc: ['body', 0],
  msg: `JSON nested deeper than ${JSON_MAX_DEPTH} levels`,
  input: null,
  ctx: { error: `nested deeper than ${JSON_MAX_DEPTH} levels`, max_depth: JSON_MAX_DEPTH },
});

const shown = (text: string): string => (text.length > 40 ? `${text.slice(0, 40)}…` : text);

/**
 * What a failure of the decompressing stream means: the body is not what its Content-Encoding says
 * (zlib: `Z_DATA_ERROR`, `Z_BUF_ERROR`; brotli: `ERR_BROTLI_*`...). raw-body hands such errors on
 * without a status, which made them 500s. Errors with a 4xx status (size, length mismatch, charset,
 * syntax, the 415 of an unknown encoding) are the error middleware's to render.
 */
const refusal = (error: Error & { status?: unknown; code?: unknown }, encoding: string): Error => {
  if (typeof error.status === 'number' && error.status >= 400 && error.status < 500) {
    if (error.status === 415 && /content-encoding/i.test(error.message)) return new AppError(415, `Unsupported Content-Encoding: ${shown(encoding)}`);
    return error;
  }
  if (encoding !== 'identity' && (typeof error.code === 'string' || typeof (error as { errno?: unknown }).errno === 'number')) {
    return new AppError(400, `Request body is not valid ${shown(encoding)} data (Content-Encoding)`);
  }
  return error;
};

/** A body refusal in one sentence, for routes that answer it themselves. */
const deferredMessage = (error: unknown): string => {
  const failure = (error ?? {}) as { status?: unknown; message?: unknown };
  if (failure.status === 413) return 'Request body too large';
  if (error instanceof AppError && Array.isArray(error.detail) && error.detail[0]?.type === 'json_invalid') return String(tooDeepEntry().msg);
  const message = String(failure.message ?? error).slice(0, 200);
  return /json/i.test(message) ? `The request body is not valid JSON: ${message}` : message;
};

/**
 * Keeps every stream the parser pipes the request into (co-body's inflation: `req.pipe(gunzip)`,
 * brotli, deflate) under watch until the request is answered. raw-body takes its listeners off such
 * a stream as soon as it has an answer (the size limit, a decoding error): a 1 KiB gzip bomb that
 * inflates past BODY_LIMIT with its trailer cut got its 413, then the stream, still fed by the
 * request, failed at the request's end (`Z_BUF_ERROR`) with no listener left, an uncaught 'error'
 * that ended the process. Here each such stream keeps a listener for as long as it lives, and once
 * the parse is over it is unpiped and destroyed: a bomb is not inflated any further after its
 * refusal, and whatever the stream still says is heard (and dropped: the refusal has been made).
 * `req.pipe` is wrapped on this request object only, for the parse, and restored after it.
 */
const watchPipedStreams = (req: IncomingMessage): (() => void) => {
  const piped: NodeJS.WritableStream[] = [];
  const pipe = req.pipe;
  const ignoreLateError = (): void => {};
  req.pipe = function watchedPipe<T extends NodeJS.WritableStream>(this: IncomingMessage, destination: T, options?: { end?: boolean }): T {
    destination.on('error', ignoreLateError);
    piped.push(destination);
    return pipe.call(this, destination, options) as T;
  };
  return () => {
    req.pipe = pipe;
    for (const destination of piped) {
      req.unpipe(destination);
      (destination as NodeJS.WritableStream & { destroy?(): void }).destroy?.();
    }
  };
};

/**
 * The body parser: JSON, urlencoded forms and text, up to `limit` (after decompression), gzip,
 * deflate and br bodies decoded. Bodies nested deeper than JSON_MAX_DEPTH are refused here, before
 * any route, validator, log line or error body walks them. JSON.parse itself is iterative in V8,
 * and the check recurses at most JSON_MAX_DEPTH + 1 frames, so neither overflows on a 1 MB `[[[[`.
 * Forms nest through qs, capped at 5 levels (qs's default, spelled out).
 */
export const bodyParser = ({ limit, deferErrors }: { limit: string; deferErrors?(ctx: Parameters<Middleware<AppState>>[0]): boolean }): Middleware<AppState> => {
  const parse = koaBody({
    jsonLimit: limit,
    formLimit: limit,
    textLimit: limit,
    multipart: false,
    jsonStrict: false,
    queryString: { depth: 5, parameterLimit: 1000, arrayLimit: 20 },
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH, HttpMethodEnum.DELETE],
    onError: (error, ctx) => {
      throw refusal(error, String(ctx.get('content-encoding') || 'identity'));
    },
  });
  const noop = () => Promise.resolve();
  return async function parseBody(ctx, next) {
    const release = watchPipedStreams(ctx.req);
    try {
      try {
        await parse(ctx, noop);
      } finally {
        release();
      }
      if (exceedsDepth(ctx.request.body, JSON_MAX_DEPTH)) throw unprocessable([tooDeepEntry()]);
    } catch (error) {
      if (!deferErrors?.(ctx)) throw error;
      // The route answers it in its own terms (POST /logs/query: HTTP 200 {error}).
      ctx.state.bodyError = deferredMessage(error);
      ctx.request.body = undefined;
    }
    await next();
  };
};
