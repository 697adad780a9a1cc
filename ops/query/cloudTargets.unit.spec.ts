import { expect } from 'chai';
import { DEFAULT_CLOUD_QUERY_SETTINGS } from './cloudQuerySettings.ts';
import { cloudTargetFactories, cloudTargetFactoriesWith } from './cloudTargets.ts';
import { failure } from '../../test/support/cloud/queryRequest.ts';

const SECRET = 'wJalrXUtnFEMI-DO-NOT-ECHO';

describe('Cloud targets: required fields (bad_connection lists the keys found, never values)', () => {
  const factories = cloudTargetFactoriesWith({ settings: DEFAULT_CLOUD_QUERY_SETTINGS });
  const build = (itemType: string, params: Record<string, unknown>) => () => factories[itemType]!({ itemType, params });

  it('given the three canonical cloud types, when the factories are listed, then each has one', () => {
    expect(Object.keys(cloudTargetFactories).sort()).to.deep.equal(['connection.aws', 'connection.azure', 'connection.gcp']);
  });

  it('given an aws connection in Athena mode without region, when built, then bad_connection naming region and the keys found', async () => {
    const error = await failure(build('connection.aws', { output_location: 's3://results/', secret_key: SECRET, access_key: 'AKIA' }), 'bad_connection');
    expect(error.message).to.contain('(Athena) needs region');
    expect(error.message).to.contain('the keys found are: output_location, secret_key, access_key');
    expect(error.message).not.to.contain(SECRET);
  });

  it('given an aws connection in Redshift mode without database, when built, then bad_connection naming database', async () => {
    const error = await failure(build('connection.aws', { region: 'us-east-1', workgroup_name: 'adhoc', secret_key: SECRET, access_key: 'AKIA' }), 'bad_connection');
    expect(error.message).to.contain('(Redshift) needs database');
    expect(error.message).not.to.contain(SECRET);
  });

  it('given an aws connection with a secret_key but no access_key, when built, then bad_connection', async () => {
    const error = await failure(build('connection.aws', { region: 'us-east-1', secret_key: SECRET }), 'bad_connection');
    expect(error.message).to.contain('both access_key and secret_key');
    expect(error.message).not.to.contain(SECRET);
  });

  it('given an aws connection with no keys while the service lends none of its own, when built, then bad_connection', async () => {
    const strict = cloudTargetFactoriesWith({ settings: { ...DEFAULT_CLOUD_QUERY_SETTINGS, ambientCredentials: false } });
    await failure(() => strict['connection.aws']!({ itemType: 'connection.aws', params: { region: 'us-east-1', role_arn: 'arn:aws:iam::1:role/r' } }), 'bad_connection');
  });

  it('given a gcp connection with neither project nor HMAC keys, when built, then bad_connection for Cloud Storage mode', async () => {
    const error = await failure(build('connection.gcp', { secret_key: SECRET, location: 'EU' }), 'bad_connection');
    expect(error.message).to.contain('(Cloud Storage) needs access_key');
    expect(error.message).to.contain('the keys found are: secret_key, location');
    expect(error.message).not.to.contain(SECRET);
  });

  it('given an azure connection with an account name only, when built, then bad_connection', async () => {
    const error = await failure(build('connection.azure', { account_name: 'acct' }), 'bad_connection');
    expect(error.message).to.contain('needs connection_string, or account_name and account_key');
    expect(error.message).to.contain('the keys found are: account_name');
  });

  it('given an azure connection string that is not one, when built, then bad_connection without the value', async () => {
    const error = await failure(build('connection.azure', { connection_string: `garbage ${SECRET}` }), 'bad_connection');
    expect(error.message).not.to.contain(SECRET);
  });

  it('given empty values, when built, then they count as missing', async () => {
    const error = await failure(build('connection.azure', { connection_string: '  ', account_key: null }), 'bad_connection');
    expect(error.message).to.contain('the keys found are: none');
  });
});
