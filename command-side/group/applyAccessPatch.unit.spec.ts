import { expect } from 'chai';
import { AppError } from '../../shared/errors.ts';
import { diffAccess, emptyAccess, holdsAnyRole, type AccessMaps } from './access.ts';
import { applyAccessPatch, patchTouches } from './applyAccessPatch.ts';
import { accessPatchErrors, validateAccessPatch } from './validateAccessPatch.ts';

const ada = '65a000000000000000000001';
const bob = '65a000000000000000000002';
const team = '65a0000000000000000000aa';

const access = (owners: string[], editors: string[] = [], viewers: string[] = []): AccessMaps => {
  const map = (lauis: string[]) => Object.fromEntries(lauis.map((laui) => [laui, 'true' as const]));
  return { owners: map(owners), editors: map(editors), viewers: map(viewers) };
};

describe('applyAccessPatch', () => {
  it('given access maps, when a patch adds and removes in several roles, then each role changes accordingly', () => {
    const before = access([ada], [bob]);
    const after = applyAccessPatch(before, { add: { owners: { [bob]: 'true' }, viewers: { [team]: 'true' } }, remove: { editors: { [bob]: 'true' } } });
    expect(after).to.deep.equal(access([ada, bob], [], [team]));
  });

  it('given access maps, when patched, then the input maps are left untouched', () => {
    const before = access([ada]);
    applyAccessPatch(before, { add: { owners: { [bob]: 'true' } }, remove: { owners: { [ada]: 'true' } } });
    expect(before).to.deep.equal(access([ada]));
  });

  it('given one principal in remove and add of one role, when patched, then the addition wins', () => {
    expect(applyAccessPatch(access([ada]), { add: { viewers: { [bob]: 'true' } }, remove: { viewers: { [bob]: 'true' } } })).to.deep.equal(
      access([ada], [], [bob]),
    );
  });

  it('given no patch or an empty one, when applied, then the maps are equal to the input', () => {
    expect(applyAccessPatch(access([ada], [bob]), undefined)).to.deep.equal(access([ada], [bob]));
    expect(applyAccessPatch(access([ada], [bob]), { add: {}, remove: {} })).to.deep.equal(access([ada], [bob]));
  });

  it('given removals of principals that hold nothing, when applied, then nothing changes', () => {
    expect(applyAccessPatch(access([ada]), { remove: { editors: { [bob]: 'true' } } })).to.deep.equal(access([ada]));
  });

  it('given the owners role, when a patch names an owner, then patchTouches says so', () => {
    expect(patchTouches({ remove: { owners: { [ada]: 'true' } } }, 'owners')).to.equal(true);
    expect(patchTouches({ add: { viewers: { [ada]: 'true' } }, remove: { owners: {} } }, 'owners')).to.equal(false);
  });
});

describe('access maps', () => {
  it('given two access states, when diffed, then grants added and removed are listed', () => {
    expect(diffAccess(access([ada], [bob]), access([ada, bob], [], [team]))).to.deep.equal({
      granted: [
        { role: 'owners', principal_laui: bob },
        { role: 'viewers', principal_laui: team },
      ],
      revoked: [{ role: 'editors', principal_laui: bob }],
    });
  });

  it('given a team as editor, when a member of the team is checked, then it holds the role only through the team', () => {
    const maps = access([ada], [team]);
    expect(holdsAnyRole(maps, [bob], ['owners', 'editors'])).to.equal(false);
    expect(holdsAnyRole(maps, [bob, team], ['owners', 'editors'])).to.equal(true);
    expect(holdsAnyRole(maps, [bob, team], ['owners'])).to.equal(false);
    expect(holdsAnyRole(emptyAccess(), [ada], ['owners', 'editors', 'viewers'])).to.equal(false);
  });
});

describe('validateAccessPatch', () => {
  it('given LAUI keys and "true" values, when validated, then nothing is reported', () => {
    expect(accessPatchErrors({ add: { owners: { [ada]: 'true' } }, remove: { viewers: { [bob]: 'true' } } }, ['body', 'access_patch'])).to.deep.equal([]);
  });

  it('given a bad key and a bad value, when validated, then a 422 list names each with its location', () => {
    const patch = { add: { owners: { 'not-a-laui': 'true' } }, remove: { viewers: { [bob]: true } } } as never;
    try {
      validateAccessPatch(patch);
    } catch (error) {
      expect(error).to.be.instanceOf(AppError);
      expect((error as AppError).status).to.equal(422);
      expect((error as AppError).detail).to.deep.equal([
        {
          type: 'value_error',
          loc: ['body', 'access_patch', 'add', 'owners', 'not-a-laui'],
          msg: 'Invalid ObjectId',
          input: 'not-a-laui',
          ctx: { error: 'must be a 24-character hexadecimal ObjectId' },
        },
        {
          type: 'literal_error',
          loc: ['body', 'access_patch', 'remove', 'viewers', bob],
          msg: "Input should be 'true'",
          input: true,
          ctx: { expected: "'true'" },
        },
      ]);
      return;
    }
    expect.fail('the patch was accepted');
  });
});
