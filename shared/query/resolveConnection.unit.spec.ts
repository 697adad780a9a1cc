import { expect } from 'chai';
import fc from 'fast-check';
import { QueryTargetError } from '../ports/QueryTarget.ts';
import { acceptedNames, prefixesOf, QUERYABLE_TYPES, resolveConnection, type QueryableType } from './resolveConnection.ts';
import { decimalValue, jsonSafeValue } from './jsonSafeValue.ts';

const failure = (itemType: string, content: unknown): QueryTargetError => {
  try {
    resolveConnection(itemType, content);
  } catch (error) {
    if (error instanceof QueryTargetError) return error;
    throw error;
  }
  throw new Error('expected a QueryTargetError');
};

describe('resolveConnection (spec 4.10 synonyms table)', () => {
  it('given a PostgreSQL connection with synonyms, when resolved, then each parameter takes the first listed name present', () => {
    const resolved = resolveConnection('connection.postgresql', { server: 's', hostname: 'h', db_port: 6432, dbname: 'd', schema: 'ignored', login: 'l', usr: 'u', pwd: 'p', secret: 's2' });
    expect(resolved.mode).to.equal('postgresql');
    expect(resolved.params).to.deep.equal({ host: 'h', port: 6432, database: 'd', user: 'u', password: 'p' });
    expect(resolved.keys).to.deep.equal(['server', 'hostname', 'db_port', 'dbname', 'schema', 'login', 'usr', 'pwd', 'secret']);
  });

  it('given provider-prefixed names, when resolved, then they count after every listed name, kind first then aliases', () => {
    expect(resolveConnection('connection.postgresql', { postgresql_host: 'a', pg_host: 'b', user: 'u' }).params.host).to.equal('a');
    expect(resolveConnection('connection.postgresql', { pg_host: 'b', postgres_host: 'c', user: 'u' }).params.host).to.equal('c');
    expect(resolveConnection('connection.postgresql', { pg_hostname: 'b', pg_host: 'x', db_host: 'plain', user: 'u' }).params.host).to.equal('plain');
    expect(resolveConnection('connection.mysql', { mysql_host: 'm', mariadb_user: 'r', mysql_password: 'p', mysql_charset: 'utf8mb4' }).params).to.deep.equal({ host: 'm', user: 'r', password: 'p', charset: 'utf8mb4' });
    expect(resolveConnection('connection.aws', { aws_region: 'eu-west-1', athena_s3_output: 's3://b/out/' }).params).to.deep.equal({ region: 'eu-west-1', output_location: 's3://b/out/' });
    expect(resolveConnection('connection.gcp', { gcp_project: 'p', bigquery_dataset: 'd' }).params).to.deep.equal({ project: 'p', dataset: 'd' });
    expect(resolveConnection('connection.azure', { azure_account_name: 'acct', azure_account_key: 'k' }).params).to.deep.equal({ account_name: 'acct', account_key: 'k' });
    expect(prefixesOf('connection.aws')).to.deep.equal(['aws', 's3', 'athena', 'redshift']);
  });

  it('given names in another letter case, null or empty values, when resolved, then case is ignored (lowercase wins) and empty values are absent', () => {
    expect(resolveConnection('connection.postgresql', { Host: 'H', host: 'h', USER: 'U' }).params).to.deep.equal({ host: 'h', user: 'U' });
    expect(resolveConnection('connection.postgresql', { host: '', hostname: 'h', user: null, username: 'u', password: '' }).params).to.deep.equal({ host: 'h', user: 'u' });
  });

  it('given every cloud row, when resolved, then the spec mode detection picks athena, redshift, s3, bigquery, gcs, azure_blob', () => {
    expect(resolveConnection('connection.aws', { output_location: 's3://o', cluster_id: 'c', database: 'd' }).mode).to.equal('athena');
    const redshift = resolveConnection('connection.aws', { cluster_identifier: 'c', db_name: 'dev', key_id: 'AK', secret_access_key: 'S', token: 'T', role: 'arn:r', work_group: 'w' });
    expect(redshift.mode).to.equal('redshift');
    expect(redshift.params).to.deep.equal({ cluster_identifier: 'c', database: 'dev', access_key: 'AK', secret_key: 'S', session_token: 'T', role_arn: 'arn:r', workgroup: 'w' });
    expect(resolveConnection('connection.aws', { rs_workgroup: 'w', db: 'dev' }).params).to.deep.equal({ workgroup_name: 'w', database: 'dev' });
    expect(resolveConnection('connection.aws', {}).mode).to.equal('s3');
    const bigquery = resolveConnection('connection.gcp', { project_id: 'p', service_account: { type: 'service_account' }, default_dataset: 'd', region: 'EU' });
    expect(bigquery.mode).to.equal('bigquery');
    expect(bigquery.params).to.deep.equal({ project: 'p', credentials: { type: 'service_account' }, dataset: 'd', location: 'EU' });
    const gcs = resolveConnection('connection.gcp', { hmac_access_key: 'A', access_key: 'B', hmac_secret: 'S', endpoint: 'http://127.0.0.1:1' });
    expect(gcs.mode).to.equal('gcs');
    expect(gcs.params).to.deep.equal({ access_key: 'A', secret_key: 'S', endpoint: 'http://127.0.0.1:1' });
    expect(resolveConnection('connection.azure', { storage_connection_string: 'cs' })).to.deep.include({ mode: 'azure_blob', params: { connection_string: 'cs' } });
  });

  it('given missing required fields, when resolved, then 400 bad_connection names them and lists the keys found, never a value', () => {
    const error = failure('connection.postgresql', { hostname_typo: 'db.internal', pwd: 'hunter2' });
    expect(error.kind).to.equal('bad_connection');
    expect(error.message).to.equal('Connection content lacks required fields: host, user (keys found: hostname_typo, pwd)');
    expect(error.message).to.not.include('hunter2');
    expect(failure('connection.mysql', {}).message).to.equal('Connection content lacks required fields: host, user (keys found: none)');
    expect(failure('connection.aws', { cluster_id: 'c' }).message).to.equal('Connection content lacks required fields: database (keys found: cluster_id)');
    expect(failure('connection.gcp', { endpoint: 'e' }).message).to.equal('Connection content lacks required fields: access_key, secret_key (keys found: endpoint)');
    expect(failure('connection.azure', { account_key: 'k' }).message).to.equal('Connection content lacks required fields: connection_string or account_name (keys found: account_key)');
    expect(failure('connection.postgresql', 'postgres://u:p@h/db').message).to.equal('Connection content must be an object of connection fields (keys found: none)');
    expect(failure('connection', { host: 'h' }).message).to.match(/^Connections of type connection cannot be queried/);
  });

  it('given any listed name of any parameter, plain or prefixed, when it is the only key, then it resolves to that parameter', () => {
    const rows: Array<[QueryableType, 'gcs' | undefined]> = [...QUERYABLE_TYPES.map((type): [QueryableType, undefined] => [type, undefined]), ['connection.gcp', 'gcs']];
    const cases = rows.flatMap(([type, mode]) =>
      acceptedNames(type, mode).flatMap(({ name, names }) => names.flatMap((synonym) => ['', ...prefixesOf(type).map((prefix) => `${prefix}_`)].map((prefix) => ({ type, mode, name, key: `${prefix}${synonym}` })))),
    );
    fc.assert(
      fc.property(fc.constantFrom(...cases), fc.constantFrom('lower', 'upper'), ({ type, mode, name, key }, letterCase) => {
        // Each gcp mode needs its own fields first (a project for BigQuery, HMAC keys for GCS); those parameters are not checked here.
        const base: Record<string, unknown> = type !== 'connection.gcp' ? {} : mode === 'gcs' ? { hmac_access_key: 'a', hmac_secret: 's' } : { project: 'p' };
        const given = type !== 'connection.gcp' ? [] : mode === 'gcs' ? ['access_key', 'secret_key'] : ['project'];
        if (given.includes(name)) return;
        const content = { ...base, [letterCase === 'upper' ? key.toUpperCase() : key]: 'value' };
        let resolved;
        try {
          resolved = resolveConnection(type, content);
        } catch (error) {
          if (error instanceof QueryTargetError && error.kind === 'bad_connection') return; // required fields absent: not this property
          throw error;
        }
        expect(resolved.params[name], `${type} ${key}`).to.equal('value');
      }),
      { numRuns: 2000 },
    );
  });
});

describe('jsonSafeValue and decimalValue', () => {
  it('given driver values, when made JSON-safe, then big integers, NaN, dates and bytes become strings, recursively', () => {
    expect(jsonSafeValue({ a: [1n, 2n ** 60n, Number.NaN, -Infinity, new Date('2024-01-02T03:04:05.678Z'), Buffer.from('hi'), undefined, true] })).to.deep.equal({
      a: [1, '1152921504606846976', 'NaN', '-Infinity', '2024-01-02T03:04:05.678Z', 'aGk=', null, true],
    });
  });
  it('given decimal texts, when converted, then numbers up to 15 significant digits, strings beyond', () => {
    expect(decimalValue('12.50')).to.equal(12.5);
    expect(decimalValue('-0.000123')).to.equal(-0.000123);
    expect(decimalValue('123456789012345')).to.equal(123456789012345);
    expect(decimalValue('1234567890123456')).to.equal('1234567890123456');
    expect(decimalValue('12345678901234567.89')).to.equal('12345678901234567.89');
    expect(decimalValue('NaN')).to.equal('NaN');
    expect(decimalValue('Infinity')).to.equal('Infinity');
  });
});
