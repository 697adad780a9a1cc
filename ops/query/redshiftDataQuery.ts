import { randomUUID } from 'node:crypto';
import type { ColumnMetadata, Field, RedshiftDataClient } from '@aws-sdk/client-redshift-data';
import { QueryTargetError, type QueryRequest, type QueryResult } from '../../shared/ports/QueryTarget.ts';
import { AnswerBudget } from '../../shared/query/answerBudget.ts';
import { awsFailure } from './awsFailure.ts';
import { decimalValue, timestampValue } from './cloudValues.ts';
import { CANCEL_TIMEOUT_MS, QueryRun, pollDelays, shortMessage } from './queryRun.ts';

/** Where the statement runs: a provisioned cluster or a serverless workgroup, and its database. */
export type RedshiftPlace = { database: string } & ({ clusterIdentifier: string; workgroupName?: undefined } | { workgroupName: string; clusterIdentifier?: undefined });

/**
 * A Data API field as JSON-safe: longValue is already a number (the SDK parses it from JSON, so
 * an int8 beyond 2^53 arrives rounded: the Data API offers nothing better in its JSON format),
 * numeric arrives as text (number up to 15 digits of precision), timestamps as ISO 8601, bytes as base64.
 */
const redshiftValue = (field: Field, column: ColumnMetadata | undefined): unknown => {
  if (field.isNull === true) return null;
  if (field.booleanValue !== undefined) return field.booleanValue;
  if (field.longValue !== undefined) return field.longValue;
  if (field.doubleValue !== undefined) return field.doubleValue;
  if (field.blobValue !== undefined) return Buffer.from(field.blobValue).toString('base64');
  if (field.stringValue !== undefined) {
    const type = (column?.typeName ?? '').toLowerCase();
    if (type === 'numeric' || type === 'decimal') return decimalValue(field.stringValue, column?.precision);
    if (type === 'timestamp' || type === 'timestamptz') return timestampValue(field.stringValue);
    return field.stringValue;
  }
  return null;
};

/**
 * One statement through the Redshift Data API: ExecuteStatement (cluster identifier or workgroup
 * name, database; authentication is the caller's IAM identity, the Data API's temporary
 * credentials), DescribeStatement polled until FINISHED, then GetStatementResult paged until
 * maxRows + 1 records. The Data API sizes its own pages; records past maxRows + 1 in the last page
 * are dropped. Past the statement timeout (or when the client leaves) CancelStatement stops it.
 */
export const redshiftDataQuery = async (client: RedshiftDataClient, place: RedshiftPlace, request: QueryRequest, pollFirstMs = 100): Promise<QueryResult> => {
  // Imported here, not at the top: the SDK loads at the first Redshift statement, not at start.
  const { CancelStatementCommand, DescribeStatementCommand, ExecuteStatementCommand, GetStatementResultCommand } = await import('@aws-sdk/client-redshift-data');
  const run = new QueryRun(request);
  let id: string | undefined;
  try {
    const started = await run.firstContact(request.connectTimeoutMs, 'Redshift Data API', (abortSignal) =>
      client.send(
        new ExecuteStatementCommand({
          Sql: request.sql,
          Database: place.database,
          ClusterIdentifier: place.clusterIdentifier,
          WorkgroupName: place.workgroupName,
          ClientToken: randomUUID(),
          StatementName: 'pipeline-inspection',
        }),
        { abortSignal },
      ),
    );
    id = started.Id;
    if (id === undefined) throw new QueryTargetError('unreachable', 'The Redshift Data API started no statement');
    const statementId = id;

    let hasResultSet = false;
    for (const delay of pollDelays(pollFirstMs)) {
      const described = await run.step((abortSignal) => client.send(new DescribeStatementCommand({ Id: statementId }), { abortSignal }));
      if (described.Status === 'FINISHED') {
        hasResultSet = described.HasResultSet === true;
        break;
      }
      if (described.Status === 'FAILED' || described.Status === 'ABORTED') {
        throw new QueryTargetError('sql', `Redshift: ${shortMessage(described.Error ?? `the statement ended ${described.Status}`)}`);
      }
      await run.sleep(delay);
    }
    if (!hasResultSet) return { columns: [], rows: [], row_count: 0, truncated: false };

    let columns: ColumnMetadata[] = [];
    const budget = new AnswerBudget(request);
    let nextToken: string | undefined;
    let firstPage = true;
    do {
      const page = await run.step((abortSignal) => client.send(new GetStatementResultCommand({ Id: statementId, NextToken: nextToken }), { abortSignal }));
      if (firstPage) {
        columns = page.ColumnMetadata ?? [];
        firstPage = false;
        budget.setColumns(columns.map(columnName));
      }
      for (const record of page.Records ?? []) {
        const row = columns.map((column, index) => {
          const field = record[index];
          return field === undefined ? null : redshiftValue(field, column);
        });
        if (!budget.offer(row)) break;
      }
      nextToken = page.NextToken;
    } while (nextToken !== undefined && !budget.truncated);

    return budget.answer(columns.map(columnName));
  } catch (error) {
    if (run.stopped) {
      if (id !== undefined) {
        await client.send(new CancelStatementCommand({ Id: id }), { abortSignal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) }).catch(() => undefined);
      }
      throw run.stoppedError();
    }
    throw awsFailure(error, 'Redshift Data API');
  } finally {
    run.dispose();
  }
};

const columnName = (column: ColumnMetadata): string => column.label ?? column.name ?? '';
