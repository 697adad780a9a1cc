import { mkdtemp, realpath, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { DuckDBBlobValue, DuckDBConnection, DuckDBPreparedStatement, DuckDBValueConverter, Json } from '@duckdb/node-api';
import { QueryTargetError, type QueryRequest, type QueryResult } from '../../shared/ports/QueryTarget.ts';
import { AnswerBudget } from '../../shared/query/answerBudget.ts';
import { jsonSafeConverter } from '../../query-side/logs/jsonSafeValues.ts';
import type { CloudQuerySettings } from './cloudQuerySettings.ts';
import { duckdbExtensionFile } from './duckdbExtensionFile.ts';
import type { EngineSlots } from './engineSlots.ts';
import { fetchObjects } from './fetchObjects.ts';
import type { ObjectStore } from './ObjectStore.ts';
import { replaceLiterals, sqlStringLiteral, urlLiterals } from './objectUrlLiterals.ts';
import { QueryRun, shortMessage } from './queryRun.ts';

type DuckDB = typeof import('@duckdb/node-api');

/** The embedded engine's values: the log query's rules (jsonSafeValues.ts), and BLOBs as base64. */
const converter = (duckdb: DuckDB): DuckDBValueConverter<Json> => {
  const base = jsonSafeConverter(duckdb);
  return (value, type, self) =>
    type.typeId === duckdb.DuckDBTypeId.BLOB && value !== null ? Buffer.from((value as DuckDBBlobValue).bytes).toString('base64') : base(value, type, self);
};

/** DuckDB's refusal of a remote URL the statement reads where no literal was rewritten: say where URLs are understood. */
const hinted = (message: string): string =>
  /requires the extension|Cannot access file "(s3|gs|gcs|az|azure|abfss?|https?):/i.test(message)
    ? `${message}\nObject URLs are read as plain '...' literals: the first argument of read_parquet, read_csv or read_json (one URL or a [list]), or right after FROM, JOIN or DESCRIBE.`
    : message;

interface Engine {
  sql: string;
  /** Prefixes DuckDB may read: the query's folder, or the store's schemes with the extension. */
  allowed: string[];
  /** Statements run before the sandbox closes (LOAD, CREATE SECRET); a secret's failure is reported without DuckDB's text, which would quote it. */
  setup: Array<{ sql: string; secret: boolean }>;
  extensionDirectory: string | null;
}

/**
 * The statement in a fresh in-memory DuckDB: memory, threads and no spilling as configured,
 * extensions neither installed nor autoloaded, then (before anything of the caller's is parsed)
 * the setup statements, the allowed prefixes, external access off and the configuration locked.
 * DuckDB's parser then decides: exactly one statement, and once bound a SELECT (WITH, DESCRIBE,
 * SUMMARIZE, FROM-first included) or EXPLAIN; rows are read from a stream, chunk by chunk, until the
 * answer's budget (maxRows, QUERY_MAX_BYTES) stops them. A single value is as large as the engine's
 * memory limit lets it be (QUERY_ENGINE_MEMORY_MB) before the budget cuts it.
 * When the run stops the connection is interrupted (again every 100 ms until DuckDB returns).
 */
const runDuckdb = async (duckdb: DuckDB, engine: Engine, settings: CloudQuerySettings, request: QueryRequest, run: QueryRun): Promise<QueryResult> => {
  const instance = await duckdb.DuckDBInstance.create(':memory:', {
    autoinstall_known_extensions: 'false',
    autoload_known_extensions: 'false',
    allow_community_extensions: 'false',
    allow_unsigned_extensions: 'false',
    threads: String(settings.threads),
    memory_limit: `${settings.memoryLimitMb}MB`,
    temp_directory: '',
    ...(engine.extensionDirectory === null ? { http_proxy: 'none' } : { extension_directory: engine.extensionDirectory }),
  });
  let connection: DuckDBConnection | null = null;
  let prepared: DuckDBPreparedStatement | null = null;
  let interrupting: NodeJS.Timeout | undefined;
  const onStop = () => {
    connection?.interrupt();
    interrupting = setInterval(() => connection?.interrupt(), 100);
  };
  run.signal.addEventListener('abort', onStop, { once: true });
  try {
    connection = await instance.connect();
    for (const statement of engine.setup) {
      try {
        await connection.run(statement.sql);
      } catch (error) {
        // The deployment's extension or the credentials handed to it, not the caller's SQL.
        const detail = statement.secret ? 'the credentials could not be handed to the extension' : shortMessage(error instanceof Error ? error.message : String(error));
        throw new QueryTargetError('unreachable', `The embedded engine could not be set up: ${detail}`);
      }
    }
    await connection.run(`SET allowed_directories = [${engine.allowed.map(sqlStringLiteral).join(', ')}]`);
    await connection.run('SET enable_external_access = false');
    await connection.run('SET lock_configuration = true');
    if (run.stopped) throw run.stoppedError();

    let extracted;
    try {
      extracted = await connection.extractStatements(engine.sql);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new QueryTargetError('sql', /native callback/.test(message) ? 'No SQL statement found' : shortMessage(message));
    }
    if (extracted.count !== 1) throw new QueryTargetError('sql', `Exactly one SQL statement is allowed, found ${extracted.count}`);
    prepared = await extracted.prepare(0);
    const type = prepared.statementType;
    if (type !== duckdb.StatementType.SELECT && type !== duckdb.StatementType.EXPLAIN) {
      throw new QueryTargetError('sql', `Only a SELECT (WITH, DESCRIBE, SUMMARIZE) or EXPLAIN statement is allowed, not ${duckdb.StatementType[type] ?? type}`);
    }
    // Chunk by chunk (2,048 rows) through the answer's budget: reading stops where it stops rows.
    const result = await prepared.stream();
    const columns = result.columnNames();
    const budget = new AnswerBudget(request, columns);
    const convert = converter(duckdb);
    reading: for (;;) {
      if (run.stopped) throw run.stoppedError();
      const chunk = await result.fetchChunk();
      if (chunk === null || chunk.rowCount === 0) break;
      for (const row of chunk.convertRows(convert)) if (!budget.offer(row)) break reading;
    }
    return budget.answer(columns);
  } catch (error) {
    if (run.stopped) throw run.stoppedError();
    if (error instanceof QueryTargetError) throw error;
    throw new QueryTargetError('sql', shortMessage(hinted(error instanceof Error ? error.message : String(error))));
  } finally {
    run.signal.removeEventListener('abort', onStop);
    clearInterval(interrupting);
    prepared?.destroySync();
    connection?.closeSync();
    instance.closeSync();
  }
};

/**
 * A statement over a bucket store through the embedded engine (spec 4.10's object-storage modes).
 * With the store's DuckDB extension in DUCKDB_EXTENSION_DIRECTORY, DuckDB reads the URLs itself
 * (credentials handed over as a secret, only the store's schemes allowed). Otherwise the objects
 * the statement's URL literals name (objectUrlLiterals.ts) are fetched through the SDK into a
 * per-query folder under QUERY_OBJECTS_TEMP_DIR (capped by QUERY_OBJECTS_MAX_MB and _COUNT), the
 * literals rewritten to the local copies, and DuckDB confined to that folder. The folder is
 * removed when the statement ends, whatever happened (after DuckDB has closed).
 */
export const embeddedQuery = async (store: ObjectStore, request: QueryRequest, settings: CloudQuerySettings, slots: EngineSlots): Promise<QueryResult> => {
  const run = new QueryRun(request);
  let folder: string | null = null;
  let release: (() => void) | null = null;
  try {
    const literals = urlLiterals(request.sql);
    release = await slots.acquire(run);
    const duckdb = await import('@duckdb/node-api');
    const extension = settings.extensionDirectory === null ? null : await duckdbExtensionFile(duckdb, settings.extensionDirectory, store.extension);
    let engine: Engine;
    if (extension !== null) {
      for (const literal of literals) {
        const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(literal.url)?.[1]?.toLowerCase() ?? '';
        if (!store.schemes.includes(scheme)) {
          throw new QueryTargetError('sql', `${literal.url.slice(0, 200)}: a ${store.label} connection reads ${store.schemes.map((name) => `${name}://`).join(' or ')} URLs`);
        }
      }
      const secret = await run.firstContact(request.connectTimeoutMs, store.label, (signal) => store.duckdbSecret(signal)).catch((error: unknown) => {
        throw run.stopped ? run.stoppedError() : store.failure(error, 'credentials');
      });
      engine = { sql: request.sql, allowed: store.schemes.map((scheme) => `${scheme}://`), setup: [
          { sql: `LOAD ${store.extension}`, secret: false },
          { sql: secret, secret: true },
        ], extensionDirectory: settings.extensionDirectory };
    } else {
      folder = await realpath(await mkdtemp(join(settings.tempDirectory, 'query-objects-')));
      const replacements = await fetchObjects(
        store,
        literals,
        folder,
        { maxBytes: settings.fetchMaxBytes, maxObjects: settings.fetchMaxObjects, connectTimeoutMs: request.connectTimeoutMs },
        run,
      );
      engine = { sql: replaceLiterals(request.sql, replacements), allowed: [`${folder}/`], setup: [], extensionDirectory: null };
    }
    return await runDuckdb(duckdb, engine, settings, request, run);
  } catch (error) {
    if (run.stopped) throw run.stoppedError();
    throw error;
  } finally {
    release?.();
    // A folder that cannot be removed must not turn an answer into a failure; rm retries busy files.
    if (folder !== null) await rm(folder, { recursive: true, force: true, maxRetries: 3 }).catch(() => undefined);
    run.dispose();
  }
};
