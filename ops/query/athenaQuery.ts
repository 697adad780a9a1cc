import { randomUUID } from 'node:crypto';
import type { AthenaClient, ColumnInfo, Row } from '@aws-sdk/client-athena';
import { QueryTargetError, type QueryRequest, type QueryResult } from '../../shared/ports/QueryTarget.ts';
import { AnswerBudget } from '../../shared/query/answerBudget.ts';
import { awsFailure } from './awsFailure.ts';
import { booleanValue, decimalValue, floatValue, hexBytesToBase64, integerValue, timestampValue } from './cloudValues.ts';
import { CANCEL_TIMEOUT_MS, QueryRun, pollDelays, shortMessage } from './queryRun.ts';

export interface AthenaStatement {
  outputLocation: string;
  workgroup?: string | undefined;
  database?: string | undefined;
}

/** GetQueryResults answers at most 1,000 rows a page. */
const PAGE_LIMIT = 1000;

/** Athena's text values by the column's type (ColumnInfo.Type, lower case); a missing VarCharValue is NULL. */
const athenaValue = (text: string | undefined, column: ColumnInfo | undefined): unknown => {
  if (text === undefined) return null;
  const type = (column?.Type ?? 'varchar').toLowerCase();
  switch (type) {
    case 'tinyint':
    case 'smallint':
    case 'integer':
    case 'int':
    case 'bigint':
      return integerValue(text);
    case 'double':
    case 'float':
    case 'real':
      return floatValue(text);
    case 'decimal':
      return decimalValue(text, column?.Precision);
    case 'boolean':
      return booleanValue(text);
    case 'timestamp':
    case 'timestamp with time zone':
      return timestampValue(text);
    case 'varbinary':
      return hexBytesToBase64(text);
    default:
      return text;
  }
};

/**
 * One statement on Athena: StartQueryExecution (workgroup, database, output location), polled with
 * GetQueryExecution, then GetQueryResults paged until maxRows + 1 rows (a page is at most 1,000
 * rows and asks for no more than still needed). For a SELECT (statement type DML) the first row of
 * the first page repeats the column names: it is dropped. Past the statement timeout (or when the
 * client leaves) the query is stopped with StopQueryExecution.
 */
export const athenaQuery = async (client: AthenaClient, statement: AthenaStatement, request: QueryRequest, pollFirstMs = 100): Promise<QueryResult> => {
  // Imported here, not at the top: the SDK loads at the first Athena statement, not at start.
  const { GetQueryExecutionCommand, GetQueryResultsCommand, StartQueryExecutionCommand, StopQueryExecutionCommand } = await import('@aws-sdk/client-athena');
  const run = new QueryRun(request);
  let id: string | undefined;
  try {
    const started = await run.firstContact(request.connectTimeoutMs, 'Athena', (abortSignal) =>
      client.send(
        new StartQueryExecutionCommand({
          QueryString: request.sql,
          ClientRequestToken: randomUUID(),
          WorkGroup: statement.workgroup,
          QueryExecutionContext: statement.database === undefined ? undefined : { Database: statement.database },
          ResultConfiguration: { OutputLocation: statement.outputLocation },
        }),
        { abortSignal },
      ),
    );
    id = started.QueryExecutionId;
    if (id === undefined) throw new QueryTargetError('unreachable', 'Athena started no query execution');
    const executionId = id;

    let statementType: string | undefined;
    for (const delay of pollDelays(pollFirstMs)) {
      const { QueryExecution: execution } = await run.step((abortSignal) => client.send(new GetQueryExecutionCommand({ QueryExecutionId: executionId }), { abortSignal }));
      const state = execution?.Status?.State;
      if (state === 'SUCCEEDED') {
        statementType = execution?.StatementType;
        break;
      }
      if (state === 'FAILED' || state === 'CANCELLED') {
        const reason = execution?.Status?.AthenaError?.ErrorMessage ?? execution?.Status?.StateChangeReason ?? `the query ended ${state}`;
        // Category 1 is Athena's own (system) failure, 2 the statement's, 3 other.
        const kind = execution?.Status?.AthenaError?.ErrorCategory === 1 ? 'unreachable' : 'sql';
        throw new QueryTargetError(kind, `Athena: ${shortMessage(reason)}`);
      }
      await run.sleep(delay);
    }

    let columns: ColumnInfo[] = [];
    const budget = new AnswerBudget(request);
    let nextToken: string | undefined;
    let firstPage = true;
    do {
      const wanted = request.maxRows + 1 - budget.rows.length + (firstPage ? 1 : 0);
      const page = await run.step((abortSignal) =>
        client.send(new GetQueryResultsCommand({ QueryExecutionId: executionId, NextToken: nextToken, MaxResults: Math.min(PAGE_LIMIT, wanted) }), { abortSignal }),
      );
      let pageRows: Row[] = page.ResultSet?.Rows ?? [];
      if (firstPage) {
        columns = page.ResultSet?.ResultSetMetadata?.ColumnInfo ?? [];
        const header = pageRows[0]?.Data?.map((datum) => datum.VarCharValue);
        const isHeader = header !== undefined && header.length === columns.length && header.every((name, index) => name === (columns[index]?.Label ?? columns[index]?.Name));
        if (statementType === 'DML' && isHeader) pageRows = pageRows.slice(1);
        firstPage = false;
        budget.setColumns(columns.map(columnName));
      }
      for (const row of pageRows) {
        if (!budget.offer(columns.map((column, index) => athenaValue(row.Data?.[index]?.VarCharValue, column)))) break;
      }
      nextToken = page.NextToken;
    } while (nextToken !== undefined && !budget.truncated);

    return budget.answer(columns.map(columnName));
  } catch (error) {
    if (run.stopped) {
      if (id !== undefined) {
        await client.send(new StopQueryExecutionCommand({ QueryExecutionId: id }), { abortSignal: AbortSignal.timeout(CANCEL_TIMEOUT_MS) }).catch(() => undefined);
      }
      throw run.stoppedError();
    }
    throw awsFailure(error, 'Athena');
  } finally {
    run.dispose();
  }
};

const columnName = (column: ColumnInfo): string => column.Label ?? column.Name ?? '';
