import { expect } from 'chai';
import { DEFAULT_CLOUD_QUERY_SETTINGS } from './cloudQuerySettings.ts';
import { cloudTargetFactoriesWith } from './cloudTargets.ts';
import { awsJsonStub, type AwsJsonAnswer } from '../../test/support/cloud/awsJsonStub.ts';
import { failure, queryRequest } from '../../test/support/cloud/queryRequest.ts';

const COLUMNS = [
  { isCaseSensitive: false, isCurrency: false, isSigned: true, label: 'id', length: 0, name: 'id', nullable: 1, precision: 19, scale: 0, schemaName: 'public', tableName: 'orders', typeName: 'int8' },
  { isCaseSensitive: true, isCurrency: false, isSigned: false, label: 'name', length: 0, name: 'name', nullable: 1, precision: 256, scale: 0, schemaName: 'public', tableName: 'orders', typeName: 'varchar' },
  { isCaseSensitive: false, isCurrency: false, isSigned: true, label: 'price', length: 0, name: 'price', nullable: 1, precision: 10, scale: 2, schemaName: 'public', tableName: 'orders', typeName: 'numeric' },
  { isCaseSensitive: false, isCurrency: false, isSigned: false, label: 'at', length: 0, name: 'at', nullable: 1, precision: 29, scale: 6, schemaName: 'public', tableName: 'orders', typeName: 'timestamp' },
  { isCaseSensitive: false, isCurrency: false, isSigned: false, label: 'ok', length: 0, name: 'ok', nullable: 1, precision: 1, scale: 0, schemaName: 'public', tableName: 'orders', typeName: 'bool' },
  { isCaseSensitive: false, isCurrency: false, isSigned: true, label: 'ratio', length: 0, name: 'ratio', nullable: 1, precision: 17, scale: 17, schemaName: 'public', tableName: 'orders', typeName: 'float8' },
];

const record = (i: number) => [
  { longValue: i },
  i === 0 ? { isNull: true } : { stringValue: `name-${i}` },
  { stringValue: `${i}.25` },
  { stringValue: '2024-05-01 10:00:00.5' },
  { booleanValue: i % 2 === 0 },
  { doubleValue: i / 4 },
];

/** GetStatementResult over `total` records in pages of `pageSize`, NextToken an offset (the Data API sizes its own pages). */
const resultPages = (total: number, pageSize: number) => (input: Record<string, unknown>): AwsJsonAnswer => {
  const offset = input.NextToken === undefined ? 0 : Number(input.NextToken);
  const records = [];
  for (let i = offset; i < Math.min(total, offset + pageSize); i += 1) records.push(record(i));
  const next = offset + pageSize;
  return { body: { ColumnMetadata: COLUMNS, Records: records, TotalNumRows: total, ...(next < total ? { NextToken: String(next) } : {}) } };
};

describe('Redshift Data API target (connection.aws with cluster_identifier or workgroup_name) against a stub', () => {
  const factories = (url: string) => cloudTargetFactoriesWith({ settings: DEFAULT_CLOUD_QUERY_SETTINGS, endpoints: { redshiftData: url }, pollFirstMs: 5 });
  const provisioned = { itemType: 'connection.aws', params: { region: 'us-east-2', access_key: 'AKIAEXAMPLEKEY000002', secret_key: 'secret', cluster_identifier: 'analytics', database: 'dev' } };
  const serverless = { itemType: 'connection.aws', params: { region: 'us-east-2', access_key: 'AKIAEXAMPLEKEY000002', secret_key: 'secret', workgroup_name: 'adhoc', database: 'dev' } };

  it('given a provisioned cluster, when a SELECT finishes, then the records come typed across result pages', async () => {
    let polls = 0;
    const stub = await awsJsonStub({
      ExecuteStatement: (input) => ({ body: { Id: 'st-1', ClusterIdentifier: input.ClusterIdentifier, Database: input.Database, CreatedAt: 1714557600 } }),
      DescribeStatement: () => {
        polls += 1;
        return { body: { Id: 'st-1', Status: polls < 3 ? (polls === 1 ? 'SUBMITTED' : 'STARTED') : 'FINISHED', HasResultSet: true, ResultRows: 2500, QueryString: 'SELECT' } };
      },
      GetStatementResult: resultPages(2500, 1000),
    });
    try {
      const result = await factories(stub.url)['connection.aws']!(provisioned).execute(queryRequest('SELECT * FROM orders'));
      expect(result.columns).to.deep.equal(['id', 'name', 'price', 'at', 'ok', 'ratio']);
      expect(result.row_count).to.equal(2500);
      expect(result.truncated).to.equal(false);
      expect(result.rows[0]).to.deep.equal([0, null, 0.25, '2024-05-01T10:00:00.5Z', true, 0]);
      expect(result.rows[2499]).to.deep.equal([2499, 'name-2499', 2499.25, '2024-05-01T10:00:00.5Z', false, 624.75]);
      const execute = stub.calls.find((call) => call.operation === 'ExecuteStatement')!;
      expect(execute.input).to.include({ Sql: 'SELECT * FROM orders', ClusterIdentifier: 'analytics', Database: 'dev' });
      expect(execute.input).not.to.have.property('WorkgroupName');
      expect(execute.authorization).to.contain('/us-east-2/redshift-data/aws4_request');
      expect(stub.calls.filter((call) => call.operation === 'GetStatementResult')).to.have.length(3);
    } finally {
      await stub.close();
    }
  });

  it('given a serverless workgroup and more records than maxRows, when executed, then WorkgroupName is sent and the rows are capped with truncated, the pages past the cap not read', async () => {
    const stub = await awsJsonStub({
      ExecuteStatement: () => ({ body: { Id: 'st-2', WorkgroupName: 'adhoc', Database: 'dev' } }),
      DescribeStatement: () => ({ body: { Id: 'st-2', Status: 'FINISHED', HasResultSet: true } }),
      GetStatementResult: resultPages(100_000, 1000),
    });
    try {
      const result = await factories(stub.url)['connection.aws']!(serverless).execute(queryRequest('SELECT * FROM big', { maxRows: 1500 }));
      expect(result.row_count).to.equal(1500);
      expect(result.truncated).to.equal(true);
      expect(stub.calls.find((call) => call.operation === 'ExecuteStatement')?.input).to.include({ WorkgroupName: 'adhoc', Database: 'dev' });
      expect(stub.calls.filter((call) => call.operation === 'GetStatementResult')).to.have.length(2);
    } finally {
      await stub.close();
    }
  });

  it('given a statement without a result set, when executed, then no columns and no rows', async () => {
    const stub = await awsJsonStub({
      ExecuteStatement: () => ({ body: { Id: 'st-3' } }),
      DescribeStatement: () => ({ body: { Id: 'st-3', Status: 'FINISHED', HasResultSet: false } }),
    });
    try {
      const result = await factories(stub.url)['connection.aws']!(provisioned).execute(queryRequest('EXPLAIN SELECT 1'));
      expect(result).to.deep.equal({ columns: [], rows: [], row_count: 0, truncated: false });
    } finally {
      await stub.close();
    }
  });

  it('given a statement Redshift fails, when executed, then sql with Redshift\'s error', async () => {
    const stub = await awsJsonStub({
      ExecuteStatement: () => ({ body: { Id: 'st-4' } }),
      DescribeStatement: () => ({ body: { Id: 'st-4', Status: 'FAILED', Error: 'ERROR: relation "nope" does not exist' } }),
    });
    try {
      const error = await failure(() => factories(stub.url)['connection.aws']!(provisioned).execute(queryRequest('SELECT * FROM nope')), 'sql');
      expect(error.message).to.contain('relation "nope" does not exist');
    } finally {
      await stub.close();
    }
  });

  it('given a statement still running at the statement timeout, when executed, then timeout, and CancelStatement was sent', async () => {
    const stub = await awsJsonStub({
      ExecuteStatement: () => ({ body: { Id: 'st-5' } }),
      DescribeStatement: () => ({ body: { Id: 'st-5', Status: 'STARTED' } }),
      CancelStatement: () => ({ body: { Status: true } }),
    });
    try {
      await failure(() => factories(stub.url)['connection.aws']!(serverless).execute(queryRequest('SELECT slow()', { statementTimeoutMs: 400 })), 'timeout');
      expect(stub.calls.find((call) => call.operation === 'CancelStatement')?.input).to.deep.equal({ Id: 'st-5' });
    } finally {
      await stub.close();
    }
  });

  it('given access the Data API denies, when executed, then unreachable', async () => {
    const stub = await awsJsonStub({
      ExecuteStatement: () => ({ status: 400, errorType: 'AccessDeniedException', message: 'User is not authorized to perform: redshift-data:ExecuteStatement' }),
    });
    try {
      await failure(() => factories(stub.url)['connection.aws']!(provisioned).execute(queryRequest('SELECT 1')), 'unreachable');
    } finally {
      await stub.close();
    }
  });
});
