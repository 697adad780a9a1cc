import { expect } from 'chai';
import { DEFAULT_CLOUD_QUERY_SETTINGS } from './cloudQuerySettings.ts';
import { cloudTargetFactoriesWith } from './cloudTargets.ts';
import { awsJsonStub, stsStub, type AwsJsonAnswer } from '../../test/support/cloud/awsJsonStub.ts';
import { closedPortUrl, silentServer } from '../../test/support/cloud/loopbackServer.ts';
import { failure, queryRequest } from '../../test/support/cloud/queryRequest.ts';

const COLUMNS = [
  { CatalogName: 'hive', SchemaName: '', TableName: '', Name: 'id', Label: 'id', Type: 'bigint', Precision: 19, Scale: 0, Nullable: 'UNKNOWN', CaseSensitive: false },
  { CatalogName: 'hive', SchemaName: '', TableName: '', Name: 'name', Label: 'name', Type: 'varchar', Precision: 2147483647, Scale: 0, Nullable: 'UNKNOWN', CaseSensitive: true },
  { CatalogName: 'hive', SchemaName: '', TableName: '', Name: 'price', Label: 'price', Type: 'decimal', Precision: 10, Scale: 2, Nullable: 'UNKNOWN', CaseSensitive: false },
  { CatalogName: 'hive', SchemaName: '', TableName: '', Name: 'at', Label: 'at', Type: 'timestamp', Precision: 3, Scale: 0, Nullable: 'UNKNOWN', CaseSensitive: false },
  { CatalogName: 'hive', SchemaName: '', TableName: '', Name: 'ok', Label: 'ok', Type: 'boolean', Precision: 0, Scale: 0, Nullable: 'UNKNOWN', CaseSensitive: false },
  { CatalogName: 'hive', SchemaName: '', TableName: '', Name: 'raw', Label: 'raw', Type: 'varbinary', Precision: 0, Scale: 0, Nullable: 'UNKNOWN', CaseSensitive: false },
];

const dataRow = (i: number) => ({
  Data: [{ VarCharValue: String(i) }, { VarCharValue: `name-${i}` }, { VarCharValue: `${i}.50` }, { VarCharValue: '2024-05-01 10:00:00.123' }, { VarCharValue: i % 2 === 0 ? 'true' : 'false' }, i === 0 ? {} : { VarCharValue: '68 69' }],
});

/** Athena's GetQueryResults over `total` rows: the header first, pages of MaxResults, NextToken an offset. */
const resultsPage = (total: number) => (input: Record<string, unknown>): AwsJsonAnswer => {
  const offset = input.NextToken === undefined ? 0 : Number(input.NextToken);
  const size = Number(input.MaxResults ?? 1000);
  const all: Array<{ Data: Array<{ VarCharValue?: string }> }> = offset === 0 ? [{ Data: COLUMNS.map((column) => ({ VarCharValue: column.Name })) }] : [];
  const start = offset === 0 ? 0 : offset - 1;
  for (let i = start; all.length < size && i < total; i += 1) all.push(dataRow(i));
  const consumed = offset + all.length;
  return {
    body: {
      UpdateCount: 0,
      ResultSet: { Rows: all, ResultSetMetadata: { ColumnInfo: COLUMNS } },
      ...(consumed < total + 1 ? { NextToken: String(consumed) } : {}),
    },
  };
};

const execution = (state: string, extra: Record<string, unknown> = {}) => ({
  body: {
    QueryExecution: {
      QueryExecutionId: 'q-1',
      Query: 'SELECT ...',
      StatementType: 'DML',
      Status: { State: state, SubmissionDateTime: 1714557600, ...extra },
      WorkGroup: 'primary',
    },
  },
});

describe('Athena target (connection.aws with output_location) against a stub of the Athena API', () => {
  const connection = (params: Record<string, unknown> = {}) => ({
    itemType: 'connection.aws',
    params: { region: 'eu-west-1', access_key: 'AKIAEXAMPLEKEY000001', secret_key: 'secret', output_location: 's3://results/athena/', workgroup: 'analysts', database: 'sales', ...params },
  });
  const factories = (endpoints: Record<string, string>) => cloudTargetFactoriesWith({ settings: DEFAULT_CLOUD_QUERY_SETTINGS, endpoints, pollFirstMs: 5 });

  it('given a SELECT that succeeds after queued and running, when executed, then the rows come typed, the header row dropped, paged in 1,000s', async () => {
    let polls = 0;
    const stub = await awsJsonStub({
      StartQueryExecution: () => ({ body: { QueryExecutionId: 'q-1' } }),
      GetQueryExecution: () => {
        polls += 1;
        return execution(polls === 1 ? 'QUEUED' : polls === 2 ? 'RUNNING' : 'SUCCEEDED');
      },
      GetQueryResults: resultsPage(2500),
    });
    try {
      const target = factories({ athena: stub.url })['connection.aws']!(connection());
      const result = await target.execute(queryRequest('SELECT * FROM orders'));
      expect(result.columns).to.deep.equal(['id', 'name', 'price', 'at', 'ok', 'raw']);
      expect(result.row_count).to.equal(2500);
      expect(result.truncated).to.equal(false);
      expect(result.rows[0]).to.deep.equal([0, 'name-0', 0.5, '2024-05-01T10:00:00.123Z', true, null]);
      expect(result.rows[2499]).to.deep.equal([2499, 'name-2499', 2499.5, '2024-05-01T10:00:00.123Z', false, 'aGk=']);

      const start = stub.calls.find((call) => call.operation === 'StartQueryExecution')!;
      expect(start.input).to.include({ QueryString: 'SELECT * FROM orders', WorkGroup: 'analysts' });
      expect(start.input.QueryExecutionContext).to.deep.equal({ Database: 'sales' });
      expect(start.input.ResultConfiguration).to.deep.equal({ OutputLocation: 's3://results/athena/' });
      expect(start.authorization).to.contain('Credential=AKIAEXAMPLEKEY000001/').and.to.contain('/eu-west-1/athena/aws4_request');
      expect(stub.calls.filter((call) => call.operation === 'GetQueryExecution')).to.have.length(3);
      expect(stub.calls.filter((call) => call.operation === 'GetQueryResults').map((call) => call.input.MaxResults)).to.deep.equal([1000, 1000, 1000]);
    } finally {
      await stub.close();
    }
  });

  it('given more rows than maxRows, when executed, then maxRows come back with truncated, and no page is asked beyond maxRows + 1', async () => {
    const stub = await awsJsonStub({
      StartQueryExecution: () => ({ body: { QueryExecutionId: 'q-1' } }),
      GetQueryExecution: () => execution('SUCCEEDED'),
      GetQueryResults: resultsPage(50_000),
    });
    try {
      const target = factories({ athena: stub.url })['connection.aws']!(connection());
      const result = await target.execute(queryRequest('SELECT * FROM big', { maxRows: 1500 }));
      expect(result.row_count).to.equal(1500);
      expect(result.truncated).to.equal(true);
      expect(result.rows[1499]?.[0]).to.equal(1499);
      // 1,000 (header + 999), then the 502 still needed for 1,501 rows.
      expect(stub.calls.filter((call) => call.operation === 'GetQueryResults').map((call) => call.input.MaxResults)).to.deep.equal([1000, 502]);
    } finally {
      await stub.close();
    }
  });

  it('given a query Athena fails, when executed, then sql with Athena\'s message', async () => {
    const stub = await awsJsonStub({
      StartQueryExecution: () => ({ body: { QueryExecutionId: 'q-1' } }),
      GetQueryExecution: () =>
        execution('FAILED', {
          StateChangeReason: "line 1:8: Column 'nope' cannot be resolved",
          AthenaError: { ErrorCategory: 2, ErrorType: 1006, Retryable: false, ErrorMessage: "COLUMN_NOT_FOUND: line 1:8: Column 'nope' cannot be resolved" },
        }),
    });
    try {
      const target = factories({ athena: stub.url })['connection.aws']!(connection());
      const error = await failure(() => target.execute(queryRequest('SELECT nope')), 'sql');
      expect(error.message).to.contain("COLUMN_NOT_FOUND: line 1:8: Column 'nope' cannot be resolved");
    } finally {
      await stub.close();
    }
  });

  it('given a query still running at the statement timeout, when executed, then timeout, and StopQueryExecution was sent', async () => {
    const stub = await awsJsonStub({
      StartQueryExecution: () => ({ body: { QueryExecutionId: 'q-1' } }),
      GetQueryExecution: () => execution('RUNNING'),
      StopQueryExecution: () => ({ body: {} }),
    });
    try {
      const target = factories({ athena: stub.url })['connection.aws']!(connection());
      // The stub answers RUNNING forever: only the statement timeout ends it (else the test's timeout would).
      await failure(() => target.execute(queryRequest('SELECT slow()', { statementTimeoutMs: 400 })), 'timeout');
      expect(stub.calls.find((call) => call.operation === 'StopQueryExecution')?.input).to.deep.equal({ QueryExecutionId: 'q-1' });
    } finally {
      await stub.close();
    }
  });

  it('given credentials Athena does not recognise, when executed, then unreachable (502), not sql', async () => {
    const stub = await awsJsonStub({
      StartQueryExecution: () => ({ status: 400, errorType: 'UnrecognizedClientException', message: 'The security token included in the request is invalid.' }),
    });
    try {
      const target = factories({ athena: stub.url })['connection.aws']!(connection());
      const error = await failure(() => target.execute(queryRequest('SELECT 1')), 'unreachable');
      expect(error.message).to.contain('refused the credentials');
      expect(error.message).not.to.contain('secret');
    } finally {
      await stub.close();
    }
  });

  it('given an endpoint nobody listens on, when executed, then unreachable', async () => {
    const target = factories({ athena: await closedPortUrl() })['connection.aws']!(connection());
    await failure(() => target.execute(queryRequest('SELECT 1')), 'unreachable');
  });

  it('given a host that accepts the connection and never answers, when executed, then unreachable within the connect timeout', async () => {
    const silent = await silentServer();
    try {
      const target = factories({ athena: silent.url })['connection.aws']!(connection());
      // The server never answers: the connect timeout (its message) ended the wait, else the test's timeout would.
      const error = await failure(() => target.execute(queryRequest('SELECT 1', { connectTimeoutMs: 500 })), 'unreachable');
      expect(error.message).to.contain('did not answer within');
    } finally {
      await silent.close();
    }
  });

  it('given a role_arn, when executed, then the role is assumed through STS and Athena is called with the temporary key', async () => {
    const sts = await stsStub('ASIATEMPORARYKEY0001');
    const stub = await awsJsonStub({
      StartQueryExecution: () => ({ body: { QueryExecutionId: 'q-1' } }),
      GetQueryExecution: () => execution('SUCCEEDED'),
      GetQueryResults: resultsPage(1),
    });
    try {
      const target = factories({ athena: stub.url, sts: sts.url })['connection.aws']!(connection({ role_arn: 'arn:aws:iam::123456789012:role/inspector' }));
      const result = await target.execute(queryRequest('SELECT 1'));
      expect(result.row_count).to.equal(1);
      expect(sts.roles).to.deep.equal(['arn:aws:iam::123456789012:role/inspector']);
      expect(sts.requests[0]?.headers.authorization).to.contain('Credential=AKIAEXAMPLEKEY000001/');
      expect(stub.calls[0]?.authorization).to.contain('Credential=ASIATEMPORARYKEY0001/');
    } finally {
      await stub.close();
      await sts.close();
    }
  });
});
